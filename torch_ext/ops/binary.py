"""Binary arithmetic, bitwise and logical pointwise ops.

TensorIterator kernels (calling convention (1)), named after their stubs.
"""

import triton
import triton.language as tl
import torch

from . import _math
from ._pointwise import pointwise
from .copy import copy_kernel, fill_kernel
from ._declare import Scalar, kernel


@kernel()
@pointwise(promotion="int_to_float", takes="floating")
@triton.jit
def logaddexp2(a, b):
    m = tl.maximum(a, b)
    r = m + tl.log2(1.0 + tl.exp2(-tl.abs(a - b)))
    return tl.where(a == b, a + 1.0, r)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def add(a, b, alpha):
    return a + b * alpha


@kernel()
@pointwise()
@triton.jit
def mul(a, b):
    return a * b


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def div_true(a, b):
    return _div(a, b)


@triton.jit
def _div(a, b):
    # IEEE round-to-nearest division (Triton's `/` on fp32 may be approximate).
    if a.dtype == tl.float32:
        q = tl.div_rn(a, b)
    else:
        q = a / b
    return q


@triton.jit
def _trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


@kernel()
@pointwise(takes="no_bool")
@triton.jit
def div_trunc(a, b):
    if a.dtype.is_floating():
        q = _trunc(_div(a, b))
    else:
        q = a // b  # Triton's integer division truncates, like C
    return q


@kernel()
@pointwise(takes="no_bool")
@triton.jit
def div_floor(a, b):
    if a.dtype.is_floating():
        # PyTorch's floor division: exact for a == k * b, signed zeros kept.
        mod = a % b
        div = _div(a - mod, b)
        div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
        fl = tl.floor(div)
        fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
        # a zero quotient takes the sign of a / b (-0.0 / 1 and 0.0 / -1 give -0.0)
        negative = _div(a, b).to(tl.float32).to(tl.int32, bitcast=True) < 0
        zero = tl.where(negative, _math.negative_zero(), 0.0)
        q = tl.where(div != 0, fl, zero)
        q = tl.where(b == 0, _div(a, b), q)
    else:
        q = a // b
        r = a % b
        q = tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)
    return q


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def atan2(a, b):
    return _math.atan2(a, b)


@kernel()
@pointwise(takes="no_bool")
@triton.jit
def remainder(a, b):
    r = _math.fmod(a, b)
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@kernel()
@pointwise(takes="no_bool")
@triton.jit
def fmod(a, b):
    return _math.fmod(a, b)


@triton.jit
def _nan_aware_max(a, b):
    if a.dtype.is_floating():
        r = tl.where((a > b) | (a != a), a, b)
    else:
        r = tl.where(a > b, a, b)
    return r


@triton.jit
def _nan_aware_min(a, b):
    if a.dtype.is_floating():
        r = tl.where((a < b) | (a != a), a, b)
    else:
        r = tl.where(a < b, a, b)
    return r


@kernel()
@pointwise()
@triton.jit
def maximum(a, b):
    return _nan_aware_max(a, b)


@kernel()
@pointwise()
@triton.jit
def minimum(a, b):
    return _nan_aware_min(a, b)


@kernel()
@pointwise()
@triton.jit
def fmax(a, b):
    return tl.where((a >= b) | (b != b), a, b)


@kernel()
@pointwise()
@triton.jit
def fmin(a, b):
    return tl.where((a <= b) | (b != b), a, b)


@kernel()
@pointwise()
@triton.jit
def bitwise_and(a, b):
    return a & b


@kernel()
@pointwise()
@triton.jit
def bitwise_or(a, b):
    return a | b


@kernel()
@pointwise()
@triton.jit
def bitwise_xor(a, b):
    return a ^ b


@kernel()
@pointwise(takes="integral")
@triton.jit
def lshift(a, b):
    return tl.where((b < 0) | (b >= a.dtype.primitive_bitwidth), 0, a << b)


@kernel()
@pointwise(takes="integral")
@triton.jit
def rshift(a, b):
    bits = a.dtype.primitive_bitwidth
    s = tl.where((b < 0) | (b >= bits), bits - 1, b)
    return a >> s


@kernel()
@pointwise(promotion="bool")
@triton.jit
def logical_and(a, b):
    return (a != 0) & (b != 0)


@kernel()
@pointwise(promotion="bool")
@triton.jit
def logical_or(a, b):
    return (a != 0) | (b != 0)


@kernel()
@pointwise(promotion="bool")
@triton.jit
def logical_xor(a, b):
    return (a != 0) ^ (b != 0)


@kernel()
@pointwise(promotion="int_to_float", takes="floating")
@triton.jit
def logaddexp(a, b):
    m = tl.maximum(a, b)
    d = -tl.abs(a - b)
    r = m + tl.log(1.0 + tl.exp(d))
    return tl.where(a == b, a + 0.6931471805599453, r)


@kernel()
@pointwise()
@triton.jit
def copysign(a, b):
    neg = (b < 0) | ((b == 0) & (1.0 / b < 0))
    return tl.where(neg, -tl.abs(a), tl.abs(a))


@kernel()
@pointwise(promotion="int_to_float", takes="floating")
@triton.jit
def hypot(a, b):
    return tl.sqrt(a * a + b * b)


@kernel()
@pointwise()
@triton.jit
def heaviside(a, b):
    return tl.where(a == 0, b, (a > 0).to(a.dtype))


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def xlogy(a, b):
    r = a * tl.log(b)
    r = tl.where(a == 0, 0.0, r)
    return tl.where(b != b, b, r)


@kernel("eq")
@pointwise()
@triton.jit
def _eq(a, b):
    return a == b


@kernel("ne")
@pointwise()
@triton.jit
def _ne(a, b):
    return a != b


@kernel("lt")
@pointwise()
@triton.jit
def _lt(a, b):
    return a < b


@kernel("le")
@pointwise()
@triton.jit
def _le(a, b):
    return a <= b


@kernel("gt")
@pointwise()
@triton.jit
def _gt(a, b):
    return a > b


@kernel("ge")
@pointwise()
@triton.jit
def _ge(a, b):
    return a >= b


# Comparisons compute in the promoted dtype and write bool (or the out's dtype).
for _op in (_eq, _ne, _lt, _le, _gt, _ge):
    _op.promotion = "bool"
    _op.name = _op.name.lstrip("_")
eq, ne, lt, le, gt, ge = _eq, _ne, _lt, _le, _gt, _ge


def rsub_fn(self, other, alpha=1):
    """rsub.Tensor(self, other, alpha) = other - alpha * self (plain, (3))."""
    return add(other, self, -alpha)


@triton.jit
def _step_bits(x, y, it: tl.constexpr, SIGN: tl.constexpr):
    """nextafter on the bit pattern of x (a floating dtype as wide as `it`,
    whose sign bit is SIGN)."""
    bits = x.to(it, bitcast=True)
    ybits = y.to(it, bitcast=True)
    one = tl.full(bits.shape, 1, it)
    up = (x < y) == (x > 0)
    stepped = tl.where(up, bits + one, bits - one)
    # From zero: the smallest subnormal with y's sign.
    sign = ybits & tl.full(bits.shape, SIGN, it)
    stepped = tl.where(x == 0, sign | one, stepped)
    r = stepped.to(x.dtype, bitcast=True)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)


@pointwise(cast=[False, False])
@triton.jit
def _nextafter_same(x, y):
    # Operands as stored (one floating dtype): one unit of their own width.
    if x.dtype == tl.float64:
        r = _step_bits(x, y, tl.int64, -9223372036854775808)
    elif x.dtype == tl.float32:
        r = _step_bits(x, y, tl.int32, -2147483648)
    else:
        r = _step_bits(x, y, tl.int16, -32768)
    return r


@pointwise(cast=[False, False])
@triton.jit
def _nextafter_bf16(xb, yb):
    # bfloat16 operands as their int16 bit patterns (the interpreter's
    # float32 -> bfloat16 conversion loses subnormals): decode through the top
    # half of a float32, step the pattern, return the pattern.
    x = (xb.to(tl.int32) << 16).to(tl.float32, bitcast=True)
    y = (yb.to(tl.int32) << 16).to(tl.float32, bitcast=True)
    one = tl.full(xb.shape, 1, tl.int16)
    up = (x < y) == (x > 0)
    stepped = tl.where(up, xb + one, xb - one)
    sign = yb & tl.full(xb.shape, -32768, tl.int16)
    stepped = tl.where(x == 0, sign | one, stepped)
    r = tl.where(x == y, yb, stepped)
    return tl.where((x != x) | (y != y), tl.full(xb.shape, 32704, tl.int16), r)  # 0x7fc0: nan


def _as_tensors(out, ins, dtype):
    """The iterator's operands as tensors of `dtype` and out's shape: a number
    (0-dim CPU operand) becomes a filled 0-dim tensor, expanded."""
    res = []
    for t in ins:
        if isinstance(t, torch.Tensor) and t.dtype == dtype:
            res.append(t)
        elif isinstance(t, torch.Tensor):
            c = torch.empty(out.shape, dtype=dtype, device=out.device)
            copy_kernel((c,), (t,))
            res.append(c)
        else:
            c = torch.empty((), dtype=dtype, device=out.device)
            fill_kernel((c,), (), dtype, t)
            res.append(c.expand(out.shape))
    return tuple(res)


@kernel()
def nextafter(
    outs: tuple[torch.Tensor, ...], ins: tuple[torch.Tensor, ...], common_dtype: torch.dtype
) -> None:
    """nextafter_stub(iter): operands cast to the common dtype first."""
    out = outs[0]
    same = _as_tensors(out, ins, common_dtype)
    res = (
        out
        if out.dtype == common_dtype
        else torch.empty(out.shape, dtype=common_dtype, device=out.device)
    )
    if common_dtype == torch.bfloat16:
        _nextafter_bf16.iter(
            (res.view(torch.int16),), tuple(t.view(torch.int16) for t in same), torch.int16
        )
    elif common_dtype.is_floating_point:
        _nextafter_same.iter((res,), tuple(same), common_dtype)
    else:
        raise RuntimeError(f"nextafter: not implemented for {common_dtype} (floating types only)")
    if res is not out:
        copy_kernel(outs, (res,))


@pointwise()
@triton.jit
def _gcd(a, b):
    return _gcd_value(a, b)


@triton.jit
def _gcd_value(a, b):
    # Euclid on |a|, |b| (as PyTorch: |INT_MIN| stays negative), in a fixed
    # number of steps: 94 is enough for any pair of int64 (Fibonacci bound).
    x = tl.where(a < 0, -a, a)
    y = tl.where(b < 0, -b, b)
    for _ in range(94):
        live = x != 0
        safe = tl.where(live, x, tl.full(x.shape, 1, x.dtype))
        nx = tl.where(live, y % safe, x)
        y = tl.where(live, x, y)
        x = nx
    return y


@pointwise()
@triton.jit
def _lcm(a, b):
    # |a / gcd * b|, 0 where gcd is 0; as in C++, types narrower than int
    # compute in int32 (the store wraps to the output's width).
    g = _gcd_value(a, b)
    nz = g != 0
    if a.dtype.primitive_bitwidth < 32:
        a = a.to(tl.int32)
        b = b.to(tl.int32)
        g = g.to(tl.int32)
    r = a // tl.where(nz, g, tl.full(g.shape, 1, g.dtype)) * b
    r = tl.where(r < 0, -r, r)
    return tl.where(nz, r, tl.zeros_like(r))


def _check_integer(name, dtype):
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        raise RuntimeError(f"{name}: not implemented for {dtype} (integer types only)")


@kernel()
def gcd(
    outs: tuple[torch.Tensor, ...], ins: tuple[torch.Tensor, ...], common_dtype: torch.dtype
) -> None:
    """gcd_stub(iter): integer types only, as PyTorch."""
    _check_integer("gcd", common_dtype)
    _gcd.iter(outs, _as_tensors(outs[0], ins, common_dtype), common_dtype)


@kernel()
def lcm(
    outs: tuple[torch.Tensor, ...], ins: tuple[torch.Tensor, ...], common_dtype: torch.dtype
) -> None:
    """lcm_stub(iter): integer types only, as PyTorch."""
    _check_integer("lcm", common_dtype)
    _lcm.iter(outs, _as_tensors(outs[0], ins, common_dtype), common_dtype)


@kernel()
def remainder_scalar_tensor(self: Scalar, other: torch.Tensor) -> torch.Tensor:
    """remainder(number, tensor): the number as a 0-d tensor of the promoted dtype, then
    the pointwise remainder (Python's sign convention, as torch's)."""
    dtype = torch.result_type(self, other)
    return remainder(torch.scalar_tensor(self, dtype=dtype, device=other.device), other)
