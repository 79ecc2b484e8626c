"""Scalar maths helpers for kernels, portable to Triton's interpreter.

Functions that Triton only offers through libdevice (which the interpreter
lacks) are written here with core `tl` operations; a driver may substitute
its own (torch_ext/backends/cuda/spec.py uses libdevice).
"""
import triton
import triton.language as tl

from ..backends import spec_func


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
def _exp(x):
    return tl.exp(x)


# The correctly rounded exp where tl.exp is a fast approximation (CUDA: ex2.approx).
exp = spec_func("exp") or _exp
expm1 = spec_func("expm1") or _expm1
log1p = spec_func("log1p") or _log1p
tanh = spec_func("tanh") or _tanh
pow = spec_func("pow") or _pow
rint = spec_func("rint") or _rint
