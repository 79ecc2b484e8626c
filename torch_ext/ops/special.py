"""Special functions (lgamma, digamma, polygamma, i0 and the scaled/first-order
Bessel functions, erfcx, log_ndtr, ndtri, Hurwitz zeta, sinc, nextafter, gcd,
lcm), more
activations (mish, log_sigmoid, glu, prelu) and losses (binary cross entropy,
smooth L1, Huber).

Stub kernels (convention (1)), iterator operands as PyTorch builds them:
  mish(x), mish_backward(grad, x)
  smooth_l1(x, target; beta), smooth_l1_backward(x, target, grad; norm, beta)
  huber(x, target; delta), huber_backward(x, target, grad; norm, delta)
  prelu(x, weight), prelu_backward(x, weight, grad) -> (grad_x, grad_weight)
  lgamma, digamma, polygamma(x; n), i0, special_i0e, special_i1, special_i1e, sinc,
  special_erfcx, special_log_ndtr, special_ndtri, special_zeta(x, q), nextafter(x, y),
  gcd(a, b), lcm(a, b)
Structured impl (2): glu.out (self, dim, out), called by csrc/aten/Glu.cpp
(PyTorch's glu meta puts temporaries in its iterator: they dangle by the impl).
Plain ops (convention (3)): log_sigmoid_forward(+.output), log_sigmoid_backward
(+.grad_input), binary_cross_entropy(+.out), binary_cross_entropy_backward
(+.grad_input), glu_backward(+.grad_input).

The special functions compute in float64 whatever the input (fp16/bf16/fp32
results are rounded once at the end), with core `tl` operations only (no
libdevice: they also run in Triton's interpreter):
  sin/cos(pi x)  reduction to |r| <= 1/2 (exact), then Taylor series;
  lgamma         Lanczos (g = 7, 9 terms) for x >= 1/2, reflection below;
  digamma        recurrence to x >= 10, asymptotic series, reflection for x < 0;
  polygamma      (-1)^(n+1) n! zeta(n+1, x), Hurwitz zeta by direct terms up to
                 max(10, n+1) and Euler-Maclaurin (12 Bernoulli terms); x < 0
                 through zeta(s, q) = (-1)^s (Z(u) - Z(1-q)) + Z(q+m), all
                 arguments positive, so every loop is bounded by n alone;
  i0/i1          power series for |x| <= 20, asymptotic expansion above;
  erfcx          series of exp(x^2) erf(x) below 1.5, Laplace's continued
                 fraction above (90 terms), reflection for x < 0; log_ndtr
                 and ndtri through it (ndtri: Acklam's approximation, then
                 two Halley steps).
Edge values follow PyTorch's CPU kernels (poles, +-inf, signed zeros), except
that polygamma(1, x) at negative integers is +inf (CPU returns a large finite
number there from sin(pi x) rounding).
"""

import torch
import triton
import triton.language as tl

from . import _math
from ._pointwise import pointwise
from ._declare import kernel
from .binary import _as_tensors


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_entr(x):
    r = -x * tl.log(tl.where(x > 0, x, 1.0))
    r = tl.where(x == 0, 0.0, r)
    r = tl.where(x < 0, float("-inf"), r)
    return tl.where(x != x, x, r)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def xlog1py(x, y):
    r = x * _math.log1p(y)
    return tl.where((x == 0) & (y == y), 0.0, r)


NONE, MEAN, SUM_RED = 0, 1, 2


# ---------------------------------------------------------------------------
# float64 helpers


@triton.jit
def _sinpi_red(r):
    """sin(pi r) for |r| <= 1/2 (float64): Taylor series, 12 terms."""
    z = r * 3.141592653589793
    z2 = z * z
    s = tl.zeros_like(z) + 1.0
    for k in tl.static_range(12, 0, -1):
        s = 1.0 - z2 * s / ((2 * k) * (2 * k + 1))
    return z * s


@triton.jit
def _cospi_red(r):
    """cos(pi r) for |r| <= 1/2 (float64)."""
    z = r * 3.141592653589793
    z2 = z * z
    c = tl.zeros_like(z) + 1.0
    for k in tl.static_range(12, 0, -1):
        c = 1.0 - z2 * c / ((2 * k - 1) * (2 * k))
    return c


@triton.jit
def _reduce_half(x):
    """(r, odd): x = n + r with n the nearest integer, |r| <= 1/2 (exact), odd = n odd."""
    n = tl.floor(x + 0.5)
    r = x - n
    half = n * 0.5
    odd = tl.floor(half) != half
    return r, odd


@triton.jit
def _sinpi(x):
    """sin(pi x), float64, exact argument reduction (nan for +-inf)."""
    r, odd = _reduce_half(x)
    s = _sinpi_red(r)
    return tl.where(odd, -s, s)


@triton.jit
def _lgamma_pos(x):
    """log(Gamma(x)) for x >= 1/2 (float64): Lanczos, g = 7, 9 coefficients."""
    z = x - 1.0
    a = 0.99999999999980993 + 676.5203681218851 / (z + 1.0)
    a += -1259.1392167224028 / (z + 2.0)
    a += 771.32342877765313 / (z + 3.0)
    a += -176.61502916214059 / (z + 4.0)
    a += 12.507343278686905 / (z + 5.0)
    a += -0.13857109526572012 / (z + 6.0)
    a += 9.9843695780195716e-6 / (z + 7.0)
    a += 1.5056327351493116e-7 / (z + 8.0)
    t = z + 7.5
    return 0.91893853320467274 + (z + 0.5) * tl.log(t) - t + tl.log(a)


@triton.jit
def lgamma64(x):
    refl = x < 0.5
    lg = _lgamma_pos(tl.where(refl, 1.0 - x, x))
    s = tl.abs(_sinpi(x))
    # log(pi) - log|sin(pi x)| - lgamma(1 - x); a pole (s == 0) gives +inf.
    r = tl.where(refl, 1.1447298858494002 - tl.log(s) - lg, lg)
    return tl.where(tl.abs(x) == float("inf"), float("inf"), r)


@triton.jit
def _digamma64(x):
    neg = x < 0
    r, odd = _reduce_half(x)
    # pi / tan(pi x): the parity of n cancels between sin and cos.
    refl = 3.141592653589793 * _cospi_red(r) / _sinpi_red(r)
    y = tl.where(neg, 1.0 - x, x)
    acc = tl.zeros_like(y)
    for _ in tl.static_range(10):
        small = y < 10.0
        acc = tl.where(small, acc - 1.0 / y, acc)
        y = tl.where(small, y + 1.0, y)
    iy2 = 1.0 / (y * y)
    tail = iy2 * (
        1.0 / 12
        - iy2
        * (
            1.0 / 120
            - iy2
            * (
                1.0 / 252
                - iy2 * (1.0 / 240 - iy2 * (1.0 / 132 - iy2 * (691.0 / 32760 - iy2 / 12.0)))
            )
        )
    )
    res = acc + tl.log(y) - 0.5 / y - tail
    res = tl.where(neg, res - refl, res)
    # Poles: digamma(+0) = -inf, digamma(-0) = +inf, negative integers nan.
    zero = x == 0
    neg_zero = 1.0 / tl.where(zero, x, 1.0) < 0
    res = tl.where(zero, tl.where(neg_zero, float("inf"), -float("inf")), res)
    return tl.where(neg & (tl.floor(x) == x), float("nan"), res)


@triton.jit
def _powneg(a, s):
    """a ** -s for an integer-valued s (float64), any sign of a."""
    mag = tl.exp(-s * tl.log(tl.abs(a)))
    half = s * 0.5
    odd = tl.floor(half) != half
    return tl.where(odd, tl.where(a < 0, -mag, mag), mag)


@triton.jit
def _em_term(tail, fac, p, coef, s, j: tl.constexpr, inv_a2):
    tail += coef * fac * p
    fac = fac * (s + (2 * j + 1)) * (s + (2 * j + 2))
    return tail, fac, p * inv_a2


@triton.jit
def _zeta_tail(a, s):
    """Euler-Maclaurin remainder of zeta(s, .) from a (a >= max(10, s))."""
    b = _powneg(a, s)
    tail = a * b / (s - 1.0) + 0.5 * b
    fac = s
    p = b / a
    ia2 = 1.0 / (a * a)
    # B_2j / (2j)!, j = 1..12
    tail, fac, p = _em_term(tail, fac, p, 1.0 / 12.0, s, 0, ia2)
    tail, fac, p = _em_term(tail, fac, p, -1.0 / 720.0, s, 1, ia2)
    tail, fac, p = _em_term(tail, fac, p, 1.0 / 30240.0, s, 2, ia2)
    tail, fac, p = _em_term(tail, fac, p, -1.0 / 1209600.0, s, 3, ia2)
    tail, fac, p = _em_term(tail, fac, p, 1.0 / 47900160.0, s, 4, ia2)
    tail, fac, p = _em_term(tail, fac, p, -1.0 / 1.8924375803183791606e9, s, 5, ia2)
    tail, fac, p = _em_term(tail, fac, p, 1.0 / 7.47242496e10, s, 6, ia2)
    tail, fac, p = _em_term(tail, fac, p, -1.0 / 2.950130727918164224e12, s, 7, ia2)
    tail, fac, p = _em_term(tail, fac, p, 1.0 / 1.1646782814350067249e14, s, 8, ia2)
    tail, fac, p = _em_term(tail, fac, p, -1.0 / 4.5979787224074726105e15, s, 9, ia2)
    tail, fac, p = _em_term(tail, fac, p, 1.0 / 1.8152105401943546773e17, s, 10, ia2)
    tail, fac, p = _em_term(tail, fac, p, -1.0 / 7.1661652561756670113e18, s, 11, ia2)
    return tail


@triton.jit
def _polygamma64(q, n, terms):
    """psi^(n)(q) for n >= 1 (float64 q and n); `terms` = max(10, ceil(n + 1))."""
    s = n + 1.0
    neg = q < 0
    m = -tl.floor(q)  # q < 0: q + m in [0, 1)
    p1 = tl.where(neg, -(q + (m - 1.0)), q)  # u = 1 - (q + m), exactly; or q itself
    p2 = tl.where(neg, 1.0 - q, 1.0)
    p3 = tl.where(neg, q + m, 1.0)
    z1 = tl.zeros_like(q)
    z2 = tl.zeros_like(q)
    z3 = tl.zeros_like(q)
    for k in range(terms):
        z1 += _powneg(p1 + k, s)
        z2 += _powneg(p2 + k, s)
        z3 += _powneg(p3 + k, s)
    z1 += _zeta_tail(p1 + terms, s)
    z2 += _zeta_tail(p2 + terms, s)
    z3 += _zeta_tail(p3 + terms, s)
    half = s * 0.5
    s_odd = tl.floor(half) != half
    # (-1)^s (Z(u) - Z(1-q)) + Z(q+m), the cancelling pair summed first.
    zeta = tl.where(neg, tl.where(s_odd, (z3 - z1) + z2, (z1 + z3) - z2), z1)
    # Poles (q a non-positive integer, -inf included): zeta = +inf.
    zeta = tl.where((q <= 0) & (tl.floor(q) == q), float("inf"), zeta)
    fact = tl.exp(_lgamma_pos(s))  # n!
    r = tl.where(s_odd, -fact * zeta, fact * zeta)  # (-1)^(n+1) n! zeta
    # PyTorch's edges: psi'(+inf) = 0, psi'(-inf) = nan; n >= 2: +inf -> nan.
    r = tl.where(q == float("inf"), tl.where(n == 1.0, 0.0, float("nan")), r)
    r = tl.where(q == -float("inf"), tl.where(n == 1.0, float("nan"), r), r)
    return tl.where(q != q, q, r)


@triton.jit
def _zeta64(s, q):
    """Hurwitz zeta(s, q), float64, PyTorch's domain: s == 1 inf, s < 1 nan,
    q a non-positive integer inf, q < 0 with a non-integer s nan. Ten direct
    terms then Euler-Maclaurin: where the series would grow (s > 2 pi (q + 10))
    its terms are below exp(-20 pi) of the first one. q < 0 (s an integer)
    through the three positive arguments of _polygamma64."""
    neg = q < 0
    m = -tl.floor(q)
    p1 = tl.where(neg, -(q + (m - 1.0)), q)
    p2 = tl.where(neg, 1.0 - q, 1.0)
    p3 = tl.where(neg, q + m, 1.0)
    z1 = tl.zeros_like(q)
    z2 = tl.zeros_like(q)
    z3 = tl.zeros_like(q)
    for k in tl.static_range(10):
        z1 += _powneg(p1 + k, s)
        z2 += _powneg(p2 + k, s)
        z3 += _powneg(p3 + k, s)
    z1 += _zeta_tail(p1 + 10.0, s)
    z2 += _zeta_tail(p2 + 10.0, s)
    z3 += _zeta_tail(p3 + 10.0, s)
    half = s * 0.5
    s_odd = tl.floor(half) != half
    zeta = tl.where(neg, tl.where(s_odd, (z3 - z1) + z2, (z1 + z3) - z2), z1)
    q_int = tl.floor(q) == q
    zeta = tl.where(neg & (tl.floor(s) != s), float("nan"), zeta)
    zeta = tl.where((q <= 0) & q_int, float("inf"), zeta)
    zeta = tl.where(q == float("inf"), float("nan"), zeta)
    zeta = tl.where(s < 1.0, float("nan"), zeta)
    zeta = tl.where(s == 1.0, float("inf"), zeta)
    return tl.where((s != s) | (q != q), s + q, zeta)


@triton.jit
def bessel_i(x, ORDER1: tl.constexpr, SCALED: tl.constexpr):
    """I0 / I1 (ORDER1), times exp(-|x|) when SCALED; float64."""
    a = tl.abs(x)
    # Power series, |x| <= 20.
    y = 0.25 * tl.minimum(a, 20.0) * tl.minimum(a, 20.0)
    term = tl.zeros_like(a) + 1.0
    ser = term
    for k in tl.static_range(1, 40):
        if ORDER1:
            term = term * y / (k * (k + 1))
        else:
            term = term * y / (k * k)
        ser += term
    if ORDER1:
        ser = ser * 0.5 * a
    # Asymptotic expansion, |x| > 20: e^x / sqrt(2 pi x) * sum_k c_k / x^k.
    big = tl.maximum(a, 20.0)
    if ORDER1:
        mu = 4.0
    else:
        mu = 0.0
    t = tl.zeros_like(a) + 1.0
    asy = t
    for k in tl.static_range(1, 30):
        t = -t * (mu - (2 * k - 1) * (2 * k - 1)) / (8.0 * k * big)
        asy += t
    asy = asy / tl.sqrt(6.283185307179586 * big)
    if SCALED:
        r = tl.where(a <= 20.0, ser * tl.exp(-a), asy)
    else:
        eh = tl.exp(0.5 * big)  # e^x as e^(x/2)^2: finite up to x ~ 1419
        r = tl.where(a <= 20.0, ser, eh * (eh * asy))
    if ORDER1:  # (r * -1, not -r: Triton negates as 0 - r, which loses the sign of 0)
        r = tl.where(x < 0, r * -1.0, r)
    return tl.where(x != x, x, r)


@triton.jit
def _erfcx_pos(a):
    """exp(a^2) erfc(a) for a >= 0 (float64): a < 1.5, exp(a^2) minus the
    positive series of exp(a^2) erf(a); above, Laplace's continued fraction."""
    xs = tl.minimum(a, 1.5)
    term = xs
    ser = xs
    for n in tl.static_range(1, 40):
        term = term * 2.0 * xs * xs / (2 * n + 1)
        ser += term
    small = tl.exp(xs * xs) - 1.1283791670955126 * ser
    xb = tl.maximum(a, 1.5)
    t = xb
    for k in tl.static_range(90, 0, -1):
        t = xb + (0.5 * k) / t
    return tl.where(a < 1.5, small, 0.5641895835477563 / t)


@triton.jit
def _erfcx64(x):
    e = _erfcx_pos(tl.abs(x))
    # erfcx(-a) = 2 exp(a^2) - erfcx(a): +inf below about -26.6
    r = tl.where(x < 0, 2.0 * tl.exp(x * x) - e, e)
    return tl.where(x != x, x, r)


@triton.jit
def _log_ndtr64(x):
    z = x * 0.7071067811865476
    # x < 0: log(erfc(-z) / 2) = log(erfcx(-z) / 2) - z^2; else log1p(-erfc(z) / 2).
    lo = tl.log(0.5 * _erfcx_pos(tl.maximum(-z, 0.0))) - z * z
    q = 0.5 * _erfcx_pos(tl.maximum(z, 0.0)) * tl.exp(-z * z)
    r = tl.where(x < 0, lo, _math.log1p(-q))
    r = tl.where(x == -float("inf"), -float("inf"), r)
    return tl.where(x != x, x, r)


@triton.jit
def _ndtri64(p):
    # Acklam's rational approximations on the lower half, two Halley steps
    # against Phi(x) = erfcx(-x / sqrt 2) exp(-x^2 / 2) / 2; the upper half by
    # symmetry.
    pp = tl.minimum(p, 1.0 - p)
    lp = tl.log(tl.where(pp > 0, pp, 1.0))
    q = tl.sqrt(-2.0 * lp)
    num = (
        (
            ((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q - 2.400758277161838e00) * q
            - 2.549732539343734e00
        )
        * q
        + 4.374664141464968e00
    ) * q + 2.938163982698783e00
    den = (
        ((7.784695709041462e-03 * q + 3.224671290700398e-01) * q + 2.445134137142996e00) * q
        + 3.754408661907416e00
    ) * q + 1.0
    x_tail = num / den
    c = pp - 0.5
    r = c * c
    num = (
        (
            (
                ((-3.969683028665376e01 * r + 2.209460984245205e02) * r - 2.759285104469687e02) * r
                + 1.383577518672690e02
            )
            * r
            - 3.066479806614716e01
        )
        * r
        + 2.506628277459239e00
    ) * c
    den = (
        (
            ((-5.447609879822406e01 * r + 1.615858368580409e02) * r - 1.556989798598866e02) * r
            + 6.680131188771972e01
        )
        * r
        - 1.328068155288572e01
    ) * r + 1.0
    x = tl.where(pp < 0.02425, x_tail, num / den)
    for _ in tl.static_range(2):
        # u = (Phi(x) - pp) / phi(x), without overflow in the far tail
        u = 2.5066282746310002 * (
            0.5 * _erfcx_pos(tl.maximum(-x * 0.7071067811865476, 0.0)) - tl.exp(lp + 0.5 * x * x)
        )
        x = x - u / (1.0 + 0.5 * x * u)
    x = tl.where(pp == 0, -float("inf"), x)
    x = tl.where(p > 0.5, -x, x)
    return tl.where((p < 0) | (p > 1) | (p != p), float("nan"), x)


# ---------------------------------------------------------------------------
# special functions: stub kernels (1)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def lgamma(x):
    return lgamma64(x.to(tl.float64))


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def digamma(x):
    return _digamma64(x.to(tl.float64))


@pointwise(num_inputs=1, promotion="int_to_float")
@triton.jit
def _polygamma(x, n, terms):
    return _polygamma64(x.to(tl.float64), tl.cast(n, tl.float64), tl.cast(terms, tl.int32))


@kernel()
def polygamma(
    outs: tuple[torch.Tensor, ...], ins: tuple[torch.Tensor, ...], common_dtype: torch.dtype, n: int
) -> None:
    """polygamma_stub(iter, n): n = 0 is digamma."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        digamma.iter(outs, ins, common_dtype)
        return
    _polygamma.iter(outs, ins, common_dtype, float(n), max(10, n + 1))


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def i0(x):
    return bessel_i(x.to(tl.float64), False, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_i0e(x):
    return bessel_i(x.to(tl.float64), False, True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_i1(x):
    return bessel_i(x.to(tl.float64), True, False)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_i1e(x):
    return bessel_i(x.to(tl.float64), True, True)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_erfcx(x):
    return _erfcx64(x.to(tl.float64))


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_log_ndtr(x):
    return _log_ndtr64(x.to(tl.float64))


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_ndtri(x):
    return _ndtri64(x.to(tl.float64))


@pointwise(promotion="int_to_float")
@triton.jit
def _zeta(x, q):
    return _zeta64(x.to(tl.float64), q.to(tl.float64))


@kernel()
def special_zeta(
    outs: tuple[torch.Tensor, ...], ins: tuple[torch.Tensor, ...], common_dtype: torch.dtype
) -> None:
    """zeta_stub(iter): ins (x, q); a number operand (the Scalar overloads) as a tensor."""
    _zeta.iter(outs, _as_tensors(outs[0], ins, common_dtype), common_dtype)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def sinc(x):
    x64 = x.to(tl.float64)
    nz = tl.where(x64 == 0, 1.0, x64)
    return tl.where(x64 == 0, 1.0, _sinpi(x64) / (3.141592653589793 * nz))
