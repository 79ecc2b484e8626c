"""CUDA driver: compiled Triton kernels, libdevice available.

Tuned values and functions go here by name (see torch_ext/backends/__init__.py).
"""
import triton
import triton.language as tl  # noqa: F401  (in scope for jit functions)
from triton.language.extra import libdevice


@triton.jit
def exp(x):
    return libdevice.exp(x)


@triton.jit
def expm1(x):
    return libdevice.expm1(x)


@triton.jit
def log1p(x):
    return libdevice.log1p(x)


@triton.jit
def tanh(x):
    return libdevice.tanh(x)


@triton.jit
def pow(a, b):
    return libdevice.pow(a, b)


@triton.jit
def rint(x):
    return libdevice.rint(x)
