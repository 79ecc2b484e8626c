"""The regularised incomplete gamma functions (issue 17): igamma = P(a, x) and
igammac = Q(a, x) = 1 - P(a, x), in float64. Below x = a + 1 the power series of P
(every term positive), above it Legendre's continued fraction of Q (modified Lentz);
each gives the other as its complement, where that loses nothing. Edges as PyTorch:
nan for a < 0 or x < 0, P(0, x > 0) = 1, P(a, 0) = 0, P(inf, x) = 0, P(a, inf) = 1."""

import triton
import triton.language as tl

from ._declare import kernel
from ._pointwise import pointwise
from .special import lgamma64

_SERIES_TERMS = tl.constexpr(400)
_CF_TERMS = tl.constexpr(300)
_TINY = tl.constexpr(1e-300)


@triton.jit
def _igamma_pq(a, x):
    """(P, Q) for finite a > 0, x > 0."""
    series = x < a + 1.0
    pre = tl.exp(a * tl.log(x) - x - lgamma64(a))
    # P = pre / a * (1 + x / (a + 1) + x^2 / ((a + 1)(a + 2)) + ...)
    xs = tl.where(series, x, 0.0)
    ap = a
    term = 1.0 / a
    s = term
    for _ in range(_SERIES_TERMS):
        ap += 1.0
        term *= xs / ap
        s += term
    p_ser = pre * s
    # Q = pre * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))
    xc = tl.where(series, a + 2.0, x)
    b = xc + 1.0 - a
    c = tl.zeros_like(b) + 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _CF_TERMS):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tl.where(tl.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = tl.where(tl.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        h *= d * c
    q_cf = pre * h
    p = tl.where(series, p_ser, 1.0 - q_cf)
    q = tl.where(series, 1.0 - p_ser, q_cf)
    return p, q


@triton.jit
def _igamma(a, x, UPPER: tl.constexpr):
    z = tl.zeros_like(a).to(tl.float64) + tl.zeros_like(x).to(tl.float64)
    a = a.to(tl.float64) + z
    x = x.to(tl.float64) + z
    inf = float("inf")
    ok = (a > 0) & (x > 0) & (a < inf) & (x < inf)
    p, q = _igamma_pq(tl.where(ok, a, 1.0), tl.where(ok, x, 1.0))
    if UPPER:
        r = q
        r = tl.where(x == inf, 0.0, r)
        r = tl.where(a == inf, tl.where(x == inf, float("nan"), 1.0), r)
        r = tl.where(x == 0, 1.0, r)
        r = tl.where(a == 0, tl.where(x > 0, 0.0, float("nan")), r)
    else:
        r = p
        r = tl.where(x == inf, 1.0, r)
        r = tl.where(a == inf, tl.where(x == inf, float("nan"), 0.0), r)
        r = tl.where(x == 0, 0.0, r)
        r = tl.where(a == 0, tl.where(x > 0, 1.0, float("nan")), r)
    return tl.where((a < 0) | (x < 0) | (a != a) | (x != x), float("nan"), r)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def igamma(a, x):
    return _igamma(a, x, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def igammac(a, x):
    return _igamma(a, x, True)
