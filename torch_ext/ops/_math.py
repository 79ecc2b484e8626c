"""Scalar maths helpers for kernels, portable to Triton's interpreter.

Functions that Triton only offers through libdevice (which the interpreter
lacks) are written here with core `tl` operations; a driver may substitute
its own (torch_ext/backends/cuda/spec.py uses libdevice).
"""

import triton
import triton.language as tl

from ..backends import spec_func


@triton.jit
def negative_zero():
    """-0.0 (float32), made from its bits: Triton 3.6 compiled the literal `-0.0` (in
    `tl.where` and as a masked load's `other`) to +0.0 on an H200; 3.9 keeps its sign."""
    return tl.full([], -(2**31), tl.int32).to(tl.float32, bitcast=True)


@triton.jit
def _expm1(x):
    # Kahan's trick: accurate near 0 without a series.
    u = tl.exp(x)
    um1 = u - 1.0
    y = tl.where(u == 1.0, x, um1 * x / tl.log(u))
    y = tl.where(um1 == -1.0, -1.0, y)
    return tl.where(u == float("inf"), u, y)


@triton.jit
def _log1p(x):
    u = x + 1.0
    y = tl.where(u == 1.0, x, tl.log(u) * x / (u - 1.0))
    return tl.where(u == float("inf"), u, y)


@triton.jit
def _tanh(x):
    a = tl.abs(x)
    e = _expm1(-2.0 * a)
    t = -e / (2.0 + e)
    t = tl.where(a > 20.0, 1.0, t)
    t = tl.where(x < 0, -t, t)
    return tl.where(x != x, x, t)


@triton.jit
def _pow(a, b):
    # Float pow through exp2/log2 in float64, with the signs and special
    # cases of C's pow.
    a64 = a.to(tl.float64)
    b64 = b.to(tl.float64)
    mag = tl.exp2(b64 * tl.log2(tl.abs(a64)))
    b_int = tl.floor(b64) == b64
    b_odd = b_int & (tl.abs(b64 % 2.0) == 1.0)
    r = tl.where((a64 < 0) & b_odd, -mag, mag)
    r = tl.where((a64 < 0) & (~b_int), float("nan"), r)
    r = tl.where(b64 == 0.0, 1.0, r)
    r = tl.where(a64 == 1.0, 1.0, r)
    return r.to(a.dtype)


@triton.jit
def _rint(x):
    # Round half to even: adding and subtracting 2**mantissa_bits.
    if x.dtype == tl.float64:
        big = 4503599627370496.0
    else:
        big = 8388608.0
    a = tl.abs(x)
    r = (a + big) - big
    r = tl.where(a >= big, a, r)
    r = tl.where(x < 0, -r, r)
    return tl.where(x != x, x, r)


@triton.jit
def _scalar_in(v, x):
    """The scalar argument v as PyTorch's kernels read it beside a tensor x loaded
    as stored: rounded to x's dtype, returned in the dtype x computes in (float64
    for float64, else float32)."""
    if x.dtype == tl.float64:
        r = tl.full([], v, tl.float64)
    else:
        r = tl.full([], v, tl.float32).to(x.dtype).to(tl.float32)
    return r


@triton.jit
def _exp(x):
    return tl.exp(x)


@triton.jit
def exp_diff(a, b, src):
    """e**(a - b) as exp_ftz. Where `src` (the pointer a was loaded from) holds 16-bit
    floats, through a * log2(e) - b * log2(e): one fused multiply-add an element where
    b is a row's (softmax's and cross entropy's maximum). The product b * log2(e) is
    rounded once, an error of about |b| * 2**-24 in the exponent: far below a 16-bit
    result's rounding, a few ulp of a float32 one (float32 keeps (a - b) * log2(e)).
    The 16-bit row kernels are bound by instructions an element, not bytes (cross
    entropy bf16 4096 x 32768 on an H200: 76.1 -> 75.4 us; tests_gpu/harness/ce_rows.py,
    session 35)."""
    if src.dtype.element_ty.primitive_bitwidth < 32:  # a and b float32 (the accumulator)
        return tl.exp2(a * 1.4426950408889634 - b * 1.4426950408889634)
    return exp_ftz(a - b)


@triton.jit
def exp_ftz(x):
    """e**x through exp2 (x * log2(e)) for float32 and narrower, tl.exp for float64. On
    sm_90 tl.exp's float32 lowering (ex2.approx without .ftz) carries a fix-up for
    results in the denormal range, several instructions an element; exp2 is one
    ex2.approx.ftz: the attention backward ran 1.2-1.3x faster with it (H200, session
    21). Results below 2**-126 (x < -87.3) flush to zero: for the sums of exponentials
    of softmax, cross entropy and attention, and the erfc and sigmoid of the
    activations, that is below their rounding."""
    if x.dtype == tl.float64:
        return tl.exp(x)
    return tl.exp2(x * 1.4426950408889634)


@triton.jit
def _fmod(a, b):
    # C's fmod (and integer %): the remainder with the dividend's sign.
    return a % b


@triton.jit
def _atan_unit(t):
    # atan on [0, 1], t float64: two half-angle steps (atan t = 2 atan(t / (1 +
    # sqrt(1 + t*t)))) bring t below tan(pi/16), where 13 terms of the Taylor
    # series are exact to float64.
    t = t / (1.0 + tl.sqrt(1.0 + t * t))
    t = t / (1.0 + tl.sqrt(1.0 + t * t))
    t2 = t * t
    p = tl.zeros_like(t) + 1.0 / 25.0
    for k in tl.static_range(11, -1, -1):
        p = 1.0 / (2 * k + 1) - t2 * p
    return 4.0 * t * p


@triton.jit
def _atan(x):
    x64 = x.to(tl.float64)
    a = tl.abs(x64)
    big = a > 1.0
    r = _atan_unit(tl.where(big, 1.0 / tl.where(big, a, 1.0), a))
    r = tl.where(big, 1.5707963267948966 - r, r)
    r = tl.where(x64 < 0, -r, r)
    r = tl.where(x64 == 0, x64, r)  # keeps -0.0
    return tl.where(x64 != x64, x64, r).to(x.dtype)


@triton.jit
def _asin(x):
    x64 = x.to(tl.float64)
    return _atan(x64 / tl.sqrt((1.0 - x64) * (1.0 + x64))).to(x.dtype)


@triton.jit
def _acos(x):
    x64 = x.to(tl.float64)
    return (2.0 * _atan(tl.sqrt((1.0 - x64) / (1.0 + x64)))).to(x.dtype)


@triton.jit
def _atan2(y, x):
    y64 = y.to(tl.float64)
    x64 = x.to(tl.float64)
    ax = tl.abs(x64)
    ay = tl.abs(y64)
    mx = tl.maximum(ax, ay)
    mn = tl.minimum(ax, ay)
    q = mn / tl.where(mx == 0, 1.0, mx)
    q = tl.where((mx == float("inf")) & (mn == float("inf")), 1.0, q)
    q = tl.where((mx == float("inf")) & (mn != float("inf")), 0.0, q)
    r = _atan_unit(q)
    r = tl.where(ay > ax, 1.5707963267948966 - r, r)
    # x < 0, or x == -0.0 (1/x is -inf): the left half-plane.
    x_neg = (x64 < 0) | ((x64 == 0) & (1.0 / tl.where(x64 == 0, x64, 1.0) < 0))
    r = tl.where(x_neg, 3.141592653589793 - r, r)
    y_neg = (y64 < 0) | ((y64 == 0) & (1.0 / tl.where(y64 == 0, y64, 1.0) < 0))
    r = tl.where(y_neg, -r, r)
    return tl.where((x64 != x64) | (y64 != y64), x64 + y64, r).to(x.dtype)


@triton.jit
def _erfinv(x):
    # Giles' single-precision approximation, then two Newton steps on erf in
    # float64.
    x64 = x.to(tl.float64)
    w = -tl.log((1.0 - x64) * (1.0 + x64))
    w = tl.where(w == float("inf"), 1.0, w)
    ws = w - 2.5
    p = tl.zeros_like(ws) + 2.81022636e-08
    p = 3.43273939e-07 + p * ws
    p = -3.5233877e-06 + p * ws
    p = -4.39150654e-06 + p * ws
    p = 0.00021858087 + p * ws
    p = -0.00125372503 + p * ws
    p = -0.00417768164 + p * ws
    p = 0.246640727 + p * ws
    p = 1.50140941 + p * ws
    wl = tl.sqrt(w) - 3.0
    q = tl.zeros_like(wl) - 0.000200214257
    q = 0.000100950558 + q * wl
    q = 0.00134934322 + q * wl
    q = -0.00367342844 + q * wl
    q = 0.00573950773 + q * wl
    q = -0.0076224613 + q * wl
    q = 0.00943887047 + q * wl
    q = 1.00167406 + q * wl
    q = 2.83297682 + q * wl
    r = tl.where(w < 5.0, p, q) * x64
    for _ in tl.static_range(2):
        r = r - (tl.erf(r) - x64) / (1.1283791670955126 * tl.exp(-r * r))
    a = tl.abs(x64)
    r = tl.where(a == 1.0, x64 * float("inf"), r)
    r = tl.where((a > 1.0) | (x64 != x64), float("nan"), r)
    return tl.where(x64 == 0, x64, r).to(x.dtype)


# The correctly rounded exp where tl.exp is a fast approximation (CUDA: ex2.approx).
exp = spec_func("exp") or _exp
expm1 = spec_func("expm1") or _expm1
log1p = spec_func("log1p") or _log1p
tanh = spec_func("tanh") or _tanh
pow = spec_func("pow") or _pow
rint = spec_func("rint") or _rint
fmod = spec_func("fmod") or _fmod
atan = spec_func("atan") or _atan
asin = spec_func("asin") or _asin
acos = spec_func("acos") or _acos
atan2 = spec_func("atan2") or _atan2
erfinv = spec_func("erfinv") or _erfinv
