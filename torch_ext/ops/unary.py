"""Pointwise ops that real models reach (issue 17): inverse hyperbolics, logaddexp2,
shrinkage activations, entr, xlog1py, frexp and renorm's scale factor."""

import triton
import triton.language as tl
import builtins
import torch

from . import _math
from ._pointwise import pointwise
from ._declare import kernel


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def acosh(x):
    # log1p form: exact near 1, where x + sqrt(x*x - 1) loses the small part.
    t = x - 1.0
    r = _math.log1p(t + tl.sqrt(2.0 * t + t * t))
    big = tl.log(x) + 0.6931471805599453  # x*x would overflow
    return tl.where(x > 1e18, big, r)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def asinh(x):
    a = tl.abs(x)
    r = _math.log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a)))
    r = tl.where(a > 1e18, tl.log(a) + 0.6931471805599453, r)
    r = tl.where(x < 0, -r, r)
    return tl.where(x == 0, x, r)  # keeps -0.0


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def atanh(x):
    # No division: near |x| = 1 a GPU's float32 division cost 1e-5 relative (H100).
    r = 0.5 * (_math.log1p(x) - _math.log1p(-x))
    return tl.where(x == 0, x, r)


# -- composites over our kernels (plain ops, convention (3); structured impls (2)) -------


def _float(fn):
    return pointwise(promotion="int_to_float")(fn)


@kernel()
@pointwise()
@triton.jit
def abs(x):
    if x.dtype.is_floating():
        r = tl.abs(x)
    else:
        r = tl.where(x < 0, -x, x)
    return r


@kernel()
@pointwise()
@triton.jit
def neg(x):
    return -x


@kernel()
@_float
@triton.jit
def exp(x):
    return _math.exp(x)


@kernel()
@_float
@triton.jit
def exp2(x):
    return tl.exp2(x)


@kernel()
@_float
@triton.jit
def expm1(x):
    return _math.expm1(x)


@kernel()
@_float
@triton.jit
def log(x):
    return tl.log(x)


@kernel()
@_float
@triton.jit
def log2(x):
    return tl.log2(x)


@kernel()
@_float
@triton.jit
def log10(x):
    return tl.log(x) * 0.4342944819032518


@kernel()
@_float
@triton.jit
def log1p(x):
    return _math.log1p(x)


@kernel()
@_float
@triton.jit
def sqrt(x):
    return tl.sqrt(x)


@kernel()
@_float
@triton.jit
def rsqrt(x):
    return 1.0 / tl.sqrt(x)


@kernel()
@_float
@triton.jit
def reciprocal(x):
    if x.dtype == tl.float32:
        r = tl.div_rn(tl.full(x.shape, 1.0, tl.float32), x)
    else:
        r = 1.0 / x
    return r


@kernel()
@_float
@triton.jit
def sin(x):
    return tl.sin(x)


@kernel()
@_float
@triton.jit
def cos(x):
    return tl.cos(x)


@kernel()
@_float
@triton.jit
def tan(x):
    return tl.sin(x) / tl.cos(x)


@kernel()
@_float
@triton.jit
def tanh(x):
    return _math.tanh(x)


@kernel()
@_float
@triton.jit
def sinh(x):
    return 0.5 * (_math.expm1(x) - _math.expm1(-x))


@kernel()
@_float
@triton.jit
def cosh(x):
    return 0.5 * (tl.exp(x) + tl.exp(-x))


@kernel()
@_float
@triton.jit
def sigmoid(x):
    return 1.0 / (1.0 + _math.exp_ftz(-x))


@kernel()
@_float
@triton.jit
def erf(x):
    return tl.erf(x)


@kernel()
@_float
@triton.jit
def asin(x):
    return _math.asin(x)


@kernel()
@_float
@triton.jit
def acos(x):
    return _math.acos(x)


@kernel()
@_float
@triton.jit
def atan(x):
    return _math.atan(x)


@kernel()
@_float
@triton.jit
def erfinv(x):
    return _math.erfinv(x)


@kernel()
@pointwise(num_inputs=1, promotion="int_to_float")
@triton.jit
def logit(x, eps):
    # eps < 0: no clamping (logit_stub's convention for eps=None).
    z = tl.where(eps < 0, x, tl.minimum(tl.maximum(x, eps), 1.0 - eps))
    return tl.log(z / (1.0 - z))


@kernel()
@_float
@triton.jit
def erfc(x):
    return 1.0 - tl.erf(x)


@kernel()
@pointwise()
@triton.jit
def floor(x):
    if x.dtype.is_floating():
        r = tl.floor(x)
    else:
        r = x
    return r


@kernel()
@pointwise()
@triton.jit
def ceil(x):
    if x.dtype.is_floating():
        r = tl.ceil(x)
    else:
        r = x
    return r


@kernel()
@pointwise()
@triton.jit
def trunc(x):
    if x.dtype.is_floating():
        r = tl.where(x < 0, tl.ceil(x), tl.floor(x))
    else:
        r = x
    return r


@kernel()
@pointwise(takes="floating")
@triton.jit
def frac(x):
    return x - tl.where(x < 0, tl.ceil(x), tl.floor(x))


@kernel()
@pointwise()
@triton.jit
def round(x):
    if x.dtype.is_floating():
        r = _math.rint(x)
    else:
        r = x
    return r


@pointwise(num_inputs=1)
@triton.jit
def round_decimals(x, scale, inverse):
    # PyTorch: neg decimals divide first; ours gets (10**|d|, d < 0).
    if inverse:
        r = _math.rint(x / scale) * scale
    else:
        r = _math.rint(x * scale) / scale
    return r


@kernel()
@pointwise()
@triton.jit
def sign(x):
    if x.dtype == tl.int1 or x.dtype == tl.uint8:
        r = x != 0
    else:
        r = (x > 0).to(x.dtype) - (x < 0).to(x.dtype)
    return r


@kernel()
@pointwise(promotion="bool")
@triton.jit
def signbit(x):
    if x.dtype.is_floating():
        r = (x < 0) | ((x == 0) & (1.0 / x < 0))
    else:
        r = x < 0
    return r


@kernel()
@pointwise(cast=[False])
@triton.jit
def bitwise_not(x):
    # Loaded as stored: ~ on int1 (bool) is logical not, on integers bitwise.
    return ~x


@kernel()
@pointwise(promotion="bool")
@triton.jit
def logical_not(x):
    return x == 0


@pointwise(promotion="bool")
@triton.jit
def isnan(x):
    return x != x


@pointwise(promotion="bool")
@triton.jit
def isinf(x):
    return tl.abs(x) == float("inf")


@pointwise(promotion="bool")
@triton.jit
def isfinite(x):
    return tl.abs(x) < float("inf")


@kernel()
@pointwise(promotion="bool")
@triton.jit
def isposinf(x):
    return x == float("inf")


@kernel()
@pointwise(promotion="bool")
@triton.jit
def isneginf(x):
    return x == -float("inf")


@pointwise(num_inputs=1)
@triton.jit
def _nan_to_num(x, nan, posinf, neginf):
    r = tl.where(x != x, nan, x)
    r = tl.where(r == float("inf"), posinf, r)
    return tl.where(r == -float("inf"), neginf, r)


@kernel()
def nan_to_num(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    nan: float | None = None,
    posinf: float | None = None,
    neginf: float | None = None,
) -> None:
    """nan_to_num_stub(iter, optional<double> nan, posinf, neginf)."""
    if not outs[0].dtype.is_floating_point:
        return copy_like(outs, ins)
    info = torch.finfo(outs[0].dtype)
    hi, lo = info.max, info.min
    _nan_to_num.iter(
        outs,
        ins,
        common_dtype,
        0.0 if nan is None else nan,
        hi if posinf is None else posinf,
        lo if neginf is None else neginf,
    )


def copy_like(outs, ins):
    from .copy import copy

    copy.iter(outs, ins, outs[0].dtype)


@kernel("round_decimals")
def round_decimals_kernel(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    decimals: int,
) -> None:
    """round_decimals_stub(iter, int64 decimals)."""
    round_decimals.iter(
        outs, ins, common_dtype, float(10.0 ** builtins.abs(decimals)), decimals < 0
    )


def isnan_fn(self):
    """isnan(self) -> Tensor (plain op, convention (3))."""
    return isnan(self)


@pointwise(num_outputs=2)
@triton.jit
def _frexp(x):
    # From the bits: the exponent field, and the significand with the exponent field
    # of [0.5, 1). Subnormals are scaled into the normal range first. 0, inf and nan
    # give (x, 0), as C's frexp.
    ax = tl.abs(x)
    if x.dtype == tl.float64:
        sub = ax < 2.2250738585072014e-308
        y = tl.where(sub, x * 18014398509481984.0, x)  # 2**54
        bits = y.to(tl.int64, bitcast=True)
        e = ((bits >> 52) & 0x7FF) - 1022 - tl.where(sub, 54, 0)
        m = ((bits & -9218868437227405313) | (1022 << 52)).to(tl.float64, bitcast=True)
    else:
        sub = ax < 1.1754943508222875e-38
        y = tl.where(sub, x * 16777216.0, x)  # 2**24
        bits = y.to(tl.int32, bitcast=True)
        e = ((bits >> 23) & 0xFF) - 126 - tl.where(sub, 24, 0)
        m = ((bits & -2139095041) | (126 << 23)).to(tl.float32, bitcast=True)
    special = (x == 0) | (x != x) | (ax == float("inf"))
    return tl.where(special, x, m), tl.where(special, 0, e).to(tl.int32)


@kernel()
def frexp_out(
    self: torch.Tensor,
    mantissa: torch.Tensor,
    exponent: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """frexp.Tensor_out(self, *, mantissa, exponent): self = mantissa * 2**exponent with
    |mantissa| in [0.5, 1) (int32 exponents), with PyTorch's dtype checks."""
    if not self.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    if mantissa.dtype != self.dtype:
        raise RuntimeError(
            f"torch.frexp() expects mantissa to have dtype {self.dtype} but got {mantissa.dtype}"
        )
    if exponent.dtype != torch.int32:
        raise RuntimeError(
            f"torch.frexp() expects exponent to have int dtype but got {exponent.dtype}"
        )
    mantissa.resize_(self.shape)
    exponent.resize_(self.shape)
    _frexp.iter((mantissa, exponent), (self,), self.dtype)
    return mantissa, exponent


@pointwise(promotion="int_to_float")
@triton.jit
def _angle(x):
    zero = tl.zeros_like(x)
    return tl.where(x != x, x, tl.where(x < 0, zero + 3.141592653589793, zero))


@kernel()
def angle(self: torch.Tensor) -> torch.Tensor:
    """The argument of a real number: pi below zero, 0 otherwise, NaN kept (complex inputs
    keep the CPU fallback)."""
    return _angle(self)
