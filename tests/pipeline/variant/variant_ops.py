"""A new pointwise op's whole Triton side: one scalar function. The manifest
names it (`triton: variant_ops:hardshrink`) and fills hardshrink_stub with it.

`cast=[False]` hands the function x as stored (fp16 stays fp16) instead of in
the compute dtype, so that lambd is rounded to the tensor's dtype before the
comparison, as PyTorch's hardshrink does."""

import triton
import triton.language as tl

from torch_ext.ops._pointwise import pointwise


@pointwise(num_inputs=1, cast=[False])
@triton.jit
def hardshrink(x, lambd):
    lam = tl.full([], lambd, x.dtype)
    return tl.where((x >= -lam) & (x <= lam), 0.0, x)
