"""The torch.special Bessel functions (issue 17): J0, J1, Y0, Y1, the modified I0, I1,
K0, K1 (and e^x K0, e^x K1), the spherical j0. All in float64: a power series for small
|x| and Hankel's asymptotic expansion for large |x|, switching where both still carry
enough digits for the float32 result (the series loses about e^(2x) ulps for K, the
oscillating series about their largest term for J and Y; the asymptotic series is good to
about e^(-2x))."""

import triton
import triton.language as tl

from ._declare import kernel
from ._pointwise import pointwise
from .special import bessel_i

# tl.constexpr, as Triton's compiler requires of globals; kept on the right of a tensor
# in arithmetic (the interpreter cannot put a constexpr left of a tensor).
_GAMMA = tl.constexpr(0.5772156649015329)  # Euler's constant
_TWO_OVER_PI = tl.constexpr(0.6366197723675814)
_J_SWITCH = tl.constexpr(12.0)  # J, Y: series below, asymptotic above
_K_SWITCH = tl.constexpr(9.0)  # K: series below, asymptotic above


@triton.jit
def _hankel(x, MU: tl.constexpr, SIGNED: tl.constexpr, N: tl.constexpr):
    """P and Q of Hankel's expansion for order nu (MU = 4 nu^2):
    sum a_k / x^k over even k (P) and odd k (Q), with the signs (-1)^(k//2) when SIGNED
    (J, Y) and all positive otherwise (K: then P + Q is the whole sum)."""
    t = tl.zeros_like(x) + 1.0
    p = t
    q = tl.zeros_like(x)
    for k in tl.static_range(1, N):
        t = t * (MU - (2 * k - 1) * (2 * k - 1)) / (8.0 * k * x)
        s = t
        if SIGNED:
            if (k // 2) % 2 == 1:
                s = -t
        if k % 2 == 0:
            p += s
        else:
            q += s
    return p, q


@triton.jit
def _jy_series(a, ORDER1: tl.constexpr):
    """Series of J (order 0/1) and the non-logarithmic part of Y at a >= 0."""
    y = 0.25 * a * a
    term = tl.zeros_like(a) + 1.0
    h = tl.zeros_like(a)  # harmonic number H_k
    if ORDER1:
        j = term
        ysum = term * (1.0 - 2.0 * _GAMMA)  # k = 0: psi(1) + psi(2) = 1 - 2 gamma
        for k in tl.static_range(1, 48):
            term = -term * y / (k * (k + 1))
            h += 1.0 / k
            j += term
            ysum += term * (2.0 * h + 1.0 / (k + 1) - 2.0 * _GAMMA)
        j = j * 0.5 * a
        ysum = ysum * 0.5 * a
    else:
        j = term
        ysum = tl.zeros_like(a)
        for k in tl.static_range(1, 48):
            term = -term * y / (k * k)
            h += 1.0 / k
            j += term
            ysum -= term * h
    return j, ysum


@triton.jit
def _j(x, ORDER1: tl.constexpr):
    a = tl.abs(x)
    js, _ = _jy_series(tl.minimum(a, _J_SWITCH), ORDER1)
    big = tl.maximum(a, _J_SWITCH)
    if ORDER1:
        p, q = _hankel(big, 4.0, True, 26)
        chi = big - 2.356194490192345
    else:
        p, q = _hankel(big, 0.0, True, 26)
        chi = big - 0.7853981633974483
    ja = tl.sqrt((1.0 / big) * _TWO_OVER_PI) * (p * tl.cos(chi) - q * tl.sin(chi))
    r = tl.where(a < _J_SWITCH, js, ja)
    if ORDER1:
        r = tl.where(x < 0, r * -1.0, r)
    return tl.where(x != x, x, r)


@triton.jit
def _y(x, ORDER1: tl.constexpr):
    a = tl.maximum(x, 1e-300)
    s = tl.minimum(a, _J_SWITCH)
    js, ys = _jy_series(s, ORDER1)
    lg = tl.log(0.5 * s)
    if ORDER1:
        small = (lg * js - 1.0 / s) * _TWO_OVER_PI - ys / 3.141592653589793
    else:
        small = ((lg + _GAMMA) * js + ys) * _TWO_OVER_PI
    big = tl.maximum(a, _J_SWITCH)
    if ORDER1:
        p, q = _hankel(big, 4.0, True, 26)
        chi = big - 2.356194490192345
    else:
        p, q = _hankel(big, 0.0, True, 26)
        chi = big - 0.7853981633974483
    ya = tl.sqrt((1.0 / big) * _TWO_OVER_PI) * (p * tl.sin(chi) + q * tl.cos(chi))
    r = tl.where(a < _J_SWITCH, small, ya)
    r = tl.where(x == 0, float("-inf"), r)
    return tl.where((x < 0) | (x != x), float("nan"), r)


@triton.jit
def _k(x, ORDER1: tl.constexpr, SCALED: tl.constexpr):
    """K0 / K1 at x > 0 (times e^x when SCALED); inf at 0, nan below."""
    a = tl.maximum(x, 1e-300)
    s = tl.minimum(a, _K_SWITCH)
    y = 0.25 * s * s
    term = tl.zeros_like(s) + 1.0
    h = tl.zeros_like(s)
    lg = tl.log(0.5 * s)
    if ORDER1:
        acc = term * (1.0 - 2.0 * _GAMMA)  # psi(1) + psi(2)
        for k in tl.static_range(1, 40):
            term = term * y / (k * (k + 1))
            h += 1.0 / k
            acc += term * (2.0 * h + 1.0 / (k + 1) - 2.0 * _GAMMA)
        small = 1.0 / s + lg * bessel_i(s, True, False) - 0.25 * s * acc
    else:
        acc = tl.zeros_like(s)
        for k in tl.static_range(1, 40):
            term = term * y / (k * k)
            h += 1.0 / k
            acc += term * h
        small = acc - (lg + _GAMMA) * bessel_i(s, False, False)
    big = tl.maximum(a, _K_SWITCH)
    if ORDER1:
        p, q = _hankel(big, 4.0, False, 24)
    else:
        p, q = _hankel(big, 0.0, False, 24)
    asy = (p + q) * tl.sqrt(1.5707963267948966 / big)
    if SCALED:
        r = tl.where(a < _K_SWITCH, small * tl.exp(s), asy)
    else:
        r = tl.where(a < _K_SWITCH, small, asy * tl.exp(-big))
    r = tl.where(x == 0, float("inf"), r)
    return tl.where((x < 0) | (x != x), float("nan"), r)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_bessel_j0(x):
    return _j(x.to(tl.float64), False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_bessel_j1(x):
    return _j(x.to(tl.float64), True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_bessel_y0(x):
    return _y(x.to(tl.float64), False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_bessel_y1(x):
    return _y(x.to(tl.float64), True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_modified_bessel_i0(x):
    return bessel_i(x.to(tl.float64), False, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_modified_bessel_i1(x):
    return bessel_i(x.to(tl.float64), True, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_modified_bessel_k0(x):
    return _k(x.to(tl.float64), False, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_modified_bessel_k1(x):
    return _k(x.to(tl.float64), True, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_scaled_modified_bessel_k0(x):
    return _k(x.to(tl.float64), False, True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_scaled_modified_bessel_k1(x):
    return _k(x.to(tl.float64), True, True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_spherical_bessel_j0(x):
    x = x.to(tl.float64)
    x2 = x * x
    # sin(x)/x, by its series near 0 (1 - x^2/6 + x^4/120 - x^6/5040)
    near = 1.0 - x2 / 6.0 * (1.0 - x2 / 20.0 * (1.0 - x2 / 42.0))
    r = tl.where(tl.abs(x) < 1e-3, near, tl.sin(x) / x)
    r = tl.where(tl.abs(x) == float("inf"), 0.0, r)
    return tl.where(x != x, x, r)
