"""Triton kernels of torch_ext and the registry the C++ side calls.

`KERNELS[name]` is a Python callable; the generated C++ calls it with one of
three conventions:

(1) TensorIterator stub kernels: fn(outs, ins, common_dtype, *extra) -- all
    tensors of one shape, any strides; a 0-dim CPU operand is a number;
    `extra` are the DispatchStub's extra arguments.  Named after the stub
    without `_stub` (add, mul, div_true, lerp_scalar, ...).
(2) structured impl kernels: fn(*impl_args, *outs) -- write into the outs.
(3) plain ops: fn(*schema_args) -- return the result (functional) or mutate
    the out/self argument.

`_table.TABLE` says, for every name, its convention and the aten op or stub
it is meant for.  One file per op family; every launch goes through
`_launch.launch`; per-driver choices through `torch_ext.backends.spec`.

Adding a kernel:
* pointwise -- write the scalar function and lift it with `_pointwise.pointwise`
  (promotion, casts and extra scalar arguments are options); its `.iter` is a
  stub kernel (1), calling it is a functional op with broadcasting;
* anything else -- a `@triton.jit` kernel in the family's file, launched with
  `_launch.launch(kernel, grid, ...)`, block sizes from `spec(...)` with a
  default, and a wrapper with the calling convention of the target op;
* add the wrapper to the family's KERNELS, a line to `_table.py`, a test in
  tests/ops (accuracy.py has the tolerances).

This package does not need `torch_ext._C`: on CPU tensors the kernels run
under Triton's interpreter (tests/ops with TORCH_EXT_TEST_DEVICE=cpu).
"""

from . import (
    _pending17,
    activation,
    advanced_index,
    attention,
    binary,
    blas,
    conv,
    copy,
    distance,
    embedding_bag,
    fused,
    grid_sample,
    index,
    linalg,
    loss,
    norm,
    optim,
    random,
    reduction,
    selection,
    softmax,
    sort,
    spatial,
    special,
    ternary,
    unary,
)

KERNELS = {}
for _family in (
    binary,
    unary,
    activation,
    ternary,
    copy,
    reduction,
    softmax,
    norm,
    blas,
    index,
    advanced_index,
    loss,
    random,
    sort,
    fused,
    optim,
    attention,
    conv,
    spatial,
    special,
    selection,
    distance,
    linalg,
    grid_sample,
    embedding_bag,
    _pending17,
):
    KERNELS.update(_family.KERNELS)
