"""Pointwise ops of three operands, and clamp (convention (1)).

lerp_scalar(self, end; weight)       lerp_kernel_scalar_weight
lerp_tensor(self, end, weight)       lerp_kernel_tensor_weight
addcmul(self, t1, t2; value), addcdiv(self, t1, t2; value)
addr(self, vec1 column, vec2 row; beta, alpha)   addr_stub (beta == 0 ignores self)
where(cond, self, other)             where_kernel (computes in the out's dtype)
clamp(x, min, max)                   clamp_stub (tensor bounds)
clamp_scalar(x; min, max), clamp_min_scalar(x; min), clamp_max_scalar(x; max)
pow_tensor_tensor(base, exp), pow_tensor_scalar(base; exp)
"""

import torch
import triton
import triton.language as tl

from . import _math
from ._pointwise import pointwise
from ._declare import Scalar, kernel


@triton.jit
def _lerp(a, b, w):
    d = b - a
    return tl.where(tl.abs(w) < 0.5, a + w * d, b - d * (1.0 - w))


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def lerp_scalar(a, b, w):
    return _lerp(a, b, w)


@kernel()
@pointwise()
@triton.jit
def lerp_tensor(a, b, w):
    return _lerp(a, b, w)


@kernel()
@pointwise(num_inputs=3, takes="no_bool")
@triton.jit
def addcmul(a, b, c, value):
    return a + value * b * c


@kernel()
@pointwise(num_inputs=3)
@triton.jit
def addcdiv(a, b, c, value):
    return a + value * (b / c)


@pointwise(cast=[False, True, True])
@triton.jit
def _where(cond, a, b):
    return tl.where(cond != 0, a, b)


@kernel(shapes=True)  # a Pointwise's iterator form: sizes traced there
def where(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype | None = None,
) -> None:
    # where's iterator has no common dtype: the condition is bool.
    _where.iter(outs, ins, outs[0].dtype)


def where_fn(cond, a, b):
    """Functional where with broadcasting and promotion."""
    dt = _where.result_dtypes([a, b])[0]
    return _where(cond, a, b, out_dtype=dt)


@triton.jit
def _clamp_one(x, lo, hi):
    r = tl.where(x < lo, lo, x)
    r = tl.where(r > hi, hi, r)
    if x.dtype.is_floating():
        # NaN anywhere gives NaN (three selects: `|` of 0-d scalars fails in the interpreter)
        r = tl.where(x != x, x, r)
        r = tl.where(lo != lo, lo, r)
        r = tl.where(hi != hi, hi, r)
    return r


@kernel()
@pointwise(takes="no_bool")
@triton.jit
def clamp(x, lo, hi):
    return _clamp_one(x, lo, hi)


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def clamp_scalar(x, lo, hi):
    return _clamp_one(x, lo, hi)


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def clamp_min_scalar(x, lo):
    r = tl.where(x < lo, lo, x)
    if x.dtype.is_floating():
        r = tl.where(lo != lo, lo, r)
    return r


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def clamp_max_scalar(x, hi):
    r = tl.where(x > hi, hi, x)
    if x.dtype.is_floating():
        r = tl.where(hi != hi, hi, r)
    return r


@triton.jit
def _ipow(b, e):
    # Integer power by squaring; negative exponents as in PyTorch (1, -1 or 0).
    r = b * 0 + 1
    base = b
    ee = e
    for _ in range(63):
        r = tl.where((ee & 1) != 0, r * base, r)
        base = base * base
        ee = ee >> 1
    neg = e < 0
    rn = tl.where(b == 1, 1, tl.where(b == -1, tl.where((e & 1) != 0, -1, 1), 0))
    return tl.where(neg, rn, r)


@kernel()
@pointwise(takes="no_bool")
@triton.jit
def pow_tensor_tensor(b, e):
    if b.dtype.is_floating():
        r = _math.pow(b, e)
    else:
        r = _ipow(b, e)
    return r


@pointwise(num_inputs=1)
@triton.jit
def _pow_scalar(b, e):
    if b.dtype.is_floating():
        r = _math.pow(b, b * 0 + e)
    else:
        r = _ipow(b, b * 0 + e)
    return r


@pointwise()
@triton.jit
def _square(b):
    return b * b


@pointwise()
@triton.jit
def _cube(b):
    return b * b * b


@pointwise(promotion="int_to_float")
@triton.jit
def _sqrt(b):
    return tl.sqrt(b)


@pointwise(promotion="int_to_float")
@triton.jit
def _rsqrt(b):
    return 1.0 / tl.sqrt(b)


@pointwise()
@triton.jit
def _reciprocal(b):
    return 1.0 / b


@kernel(shapes=True)
def pow_tensor_scalar(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    exponent: Scalar,
) -> None:
    """pow_tensor_scalar_stub(iter, Scalar exp); cheap exponents get their own kernel."""
    special = {2: _square, 3: _cube, 0.5: _sqrt, -0.5: _rsqrt, -1: _reciprocal}
    op = special.get(exponent)
    if op is _reciprocal and not common_dtype.is_floating_point:
        op = None
    if op is not None:
        op.iter(outs, ins, common_dtype)
    else:
        _pow_scalar.iter(outs, ins, common_dtype, exponent)


@pointwise(num_inputs=3)
@triton.jit
def _addr(s, a, b, beta, alpha):
    return beta * s + alpha * (a * b)


@pointwise(num_inputs=3)
@triton.jit
def _addr_no_self(s, a, b, alpha):
    # beta == 0: self is not read (NaN and inf in it do not propagate)
    return alpha * (a * b)


@pointwise(num_inputs=3)
@triton.jit
def _addr_bool(s, a, b, beta, alpha):
    return ((s != 0) & (beta != 0)) | ((a != 0) & (b != 0) & (alpha != 0))


@kernel()
def addr(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    beta: Scalar,
    alpha: Scalar,
) -> None:
    """addr_stub: out = beta * self + alpha * outer(vec1, vec2), the iterator's
    inputs being self, vec1 as a column and vec2 as a row."""
    if common_dtype == torch.bool:
        _addr_bool.iter(outs, ins, common_dtype, int(bool(beta)), int(bool(alpha)))
    elif beta == 0:
        _addr_no_self.iter(outs, ins, common_dtype, alpha)
    else:
        _addr.iter(outs, ins, common_dtype, beta, alpha)


def where_out(condition, self, other, out):
    """where.self_out (plain, convention (3))."""
    shape = out.shape
    ins = tuple(
        t.expand(shape)
        if isinstance(t, torch.Tensor) and t.dim()
        else (
            t.item() if isinstance(t, torch.Tensor) and t.device != out.device else t.expand(shape)
        )
        for t in (condition, self, other)
    )
    _where.iter((out,), ins, out.dtype)
    return out
