"""A new pointwise op's whole Triton side: one scalar function. The manifest
names it (`triton: variant_ops:hardshrink`) and fills hardshrink_stub with it."""

import triton
import triton.language as tl


@triton.jit
def hardshrink(x, lambd):
    return tl.where((x >= -lambd) & (x <= lambd), 0.0, x)
