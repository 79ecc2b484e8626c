"""The torch.special orthogonal polynomials (issue 17): Chebyshev T, U, V, W (and their
shifted forms, of 2x - 1), Hermite H and He, Laguerre L, Legendre P, of a degree n given
per element (truncated to an integer; n < 0 gives 0, as PyTorch). In float64: the
three-term recurrence, run for as many steps as the largest degree of the block needs
(each lane stops at its own n), and for Chebyshev inside (-1, 1) with n > 8 the
trigonometric closed forms."""

import triton
import triton.language as tl

from . import _math
from ._declare import kernel
from ._pointwise import pointwise


@triton.jit
def _degree(x, n):
    """x and n as float64 blocks of one shape, and n as int64 (nan/inf -> -1)."""
    z = tl.zeros_like(x).to(tl.float64) + tl.zeros_like(n).to(tl.float64)
    xb = x.to(tl.float64) + z
    nb = n.to(tl.float64) + z
    ni = tl.where((nb != nb) | (tl.abs(nb) == float("inf")), -1.0, nb).to(tl.int64)
    return xb, ni


@triton.jit
def _chebyshev(x, n, KIND: tl.constexpr, SHIFTED: tl.constexpr):
    """KIND 0..3: T, U, V, W of y = x (or 2x - 1 when SHIFTED)."""
    xb, ni = _degree(x, n)
    if SHIFTED:
        y = xb + xb - 1.0
    else:
        y = xb
    nf = ni.to(tl.float64)
    odd = (ni % 2) == 1
    sign = tl.where(odd, -1.0, 1.0)
    theta = _math.acos(tl.minimum(tl.maximum(y, -1.0), 1.0))
    if KIND == 0:
        at1 = tl.zeros_like(y) + 1.0
        atm1 = sign
        trig = tl.cos(nf * theta)
        p1 = y
    elif KIND == 1:
        at1 = nf + 1.0
        atm1 = sign * (nf + 1.0)
        trig = tl.sin((nf + 1.0) * theta) / tl.sin(theta)
        p1 = y + y
    elif KIND == 2:
        at1 = tl.zeros_like(y) + 1.0
        atm1 = sign * (nf + nf + 1.0)
        trig = tl.cos((nf + 0.5) * theta) / tl.cos(0.5 * theta)
        p1 = y + y - 1.0
    else:
        at1 = nf + nf + 1.0
        atm1 = sign
        trig = tl.sin((nf + 0.5) * theta) / tl.sin(0.5 * theta)
        p1 = y + y + 1.0
    use_trig = (tl.abs(y) < 1.0) & (ni > 8)
    steps = tl.where(use_trig, 0, ni)
    p = tl.zeros_like(y) + 1.0
    q = p1
    for k in range(1, tl.max(steps, axis=0)):
        r = (y + y) * q - p
        upd = k < steps
        p = tl.where(upd, q, p)
        q = tl.where(upd, r, q)
    r = tl.where(ni == 0, 1.0, q)
    r = tl.where(use_trig, trig, r)
    r = tl.where(y == 1.0, at1, tl.where(y == -1.0, atm1, r))
    r = tl.where(ni < 0, 0.0, r)
    return tl.where(y != y, y, r)


@triton.jit
def _three_term(x, n, KIND: tl.constexpr):
    """KIND 0: Hermite H, 1: Hermite He, 2: Laguerre L, 3: Legendre P."""
    xb, ni = _degree(x, n)
    if KIND == 0:
        p1 = xb + xb
    elif KIND == 1:
        p1 = xb
    elif KIND == 2:
        p1 = 1.0 - xb
    else:
        p1 = xb
    p = tl.zeros_like(xb) + 1.0
    q = p1
    for k in range(1, tl.max(ni, axis=0)):
        kf = k * 1.0
        if KIND == 0:
            r = (xb + xb) * q - (kf + kf) * p
        elif KIND == 1:
            r = xb * q - kf * p
        elif KIND == 2:
            r = ((kf + kf + 1.0 - xb) * q - kf * p) / (kf + 1.0)
        else:
            r = ((kf + kf + 1.0) * xb * q - kf * p) / (kf + 1.0)
        upd = k < ni
        p = tl.where(upd, q, p)
        q = tl.where(upd, r, q)
    r = tl.where(ni == 0, 1.0, q)
    if KIND == 2:
        r = tl.where(xb == 0.0, 1.0, r)
    if KIND == 3:
        r = tl.where(xb == 1.0, 1.0, tl.where(xb == -1.0, tl.where(ni % 2 == 1, -1.0, 1.0), r))
    return tl.where(ni < 0, 0.0, r)


@triton.jit
def _hermite_limit(x, n, r):
    # PyTorch gives nan above degree 128 in float32 (512 in float64)
    if x.dtype == tl.float64:
        lim = 512
    else:
        lim = 128
    _, ni = _degree(x, n)
    return tl.where(ni > lim, float("nan"), r)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def chebyshev_polynomial_t(x, n):
    return _chebyshev(x, n, 0, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def chebyshev_polynomial_u(x, n):
    return _chebyshev(x, n, 1, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def chebyshev_polynomial_v(x, n):
    return _chebyshev(x, n, 2, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def chebyshev_polynomial_w(x, n):
    return _chebyshev(x, n, 3, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def shifted_chebyshev_polynomial_t(x, n):
    return _chebyshev(x, n, 0, True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def shifted_chebyshev_polynomial_u(x, n):
    return _chebyshev(x, n, 1, True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def shifted_chebyshev_polynomial_v(x, n):
    return _chebyshev(x, n, 2, True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def shifted_chebyshev_polynomial_w(x, n):
    return _chebyshev(x, n, 3, True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def hermite_polynomial_h(x, n):
    return _hermite_limit(x, n, _three_term(x, n, 0))


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def hermite_polynomial_he(x, n):
    return _hermite_limit(x, n, _three_term(x, n, 1))


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def laguerre_polynomial_l(x, n):
    return _three_term(x, n, 2)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def legendre_polynomial_p(x, n):
    return _three_term(x, n, 3)
