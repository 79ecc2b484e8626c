"""Binary arithmetic, bitwise and logical pointwise ops.

TensorIterator kernels (calling convention (1)), named after their stubs.
"""

import triton
import triton.language as tl

from . import _math
from ._pointwise import pointwise
from ._common import kernel


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
@pointwise()
@triton.jit
def div_trunc(a, b):
    if a.dtype.is_floating():
        q = _trunc(_div(a, b))
    else:
        q = a // b  # Triton's integer division truncates, like C
    return q


@kernel()
@pointwise()
@triton.jit
def div_floor(a, b):
    if a.dtype.is_floating():
        # PyTorch's floor division: exact for a == k * b, signed zeros kept.
        mod = a % b
        div = _div(a - mod, b)
        div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
        fl = tl.floor(div)
        fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
        zero = tl.where(_div(a, b) < 0, -0.0, 0.0)
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
@pointwise()
@triton.jit
def remainder(a, b):
    r = _math.fmod(a, b)
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@kernel()
@pointwise()
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
@pointwise()
@triton.jit
def lshift(a, b):
    return tl.where((b < 0) | (b >= a.dtype.primitive_bitwidth), 0, a << b)


@kernel()
@pointwise()
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
@pointwise(promotion="int_to_float")
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
@pointwise(promotion="int_to_float")
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

OPS = [
    add,
    mul,
    div_true,
    div_trunc,
    div_floor,
    remainder,
    fmod,
    atan2,
    maximum,
    minimum,
    fmax,
    fmin,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    lshift,
    rshift,
    logical_and,
    logical_or,
    logical_xor,
    logaddexp,
    copysign,
    hypot,
    heaviside,
    xlogy,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
]


def rsub_fn(self, other, alpha=1):
    """rsub.Tensor(self, other, alpha) = other - alpha * self (plain, (3))."""
    return add(other, self, -alpha)
