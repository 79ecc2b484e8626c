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

The manifest entry naming a kernel says which aten op or stub it is for.  One
file per op family; every launch goes through
`_launch.launch`; per-driver choices through `torch_ext.backends.spec`.

Adding a kernel:
* pointwise -- write the scalar function and lift it with `_pointwise.pointwise`
  (promotion, casts and extra scalar arguments are options); its `.iter` is a
  stub kernel (1), calling it is a functional op with broadcasting;
* anything else -- a `@triton.jit` kernel in the family's file, launched with
  `_launch.launch(kernel, grid, ...)`, block sizes from `spec(...)` with a
  default, and a wrapper with the calling convention of the target op;
* declare the wrapper with `@kernel()` (torch_ext/ops/_common.py): that puts it in
  KERNELS under its name, and codegen reads the same declaration from the source;
  then the manifest entry naming it and a test in tests/ops (accuracy.py has the
  tolerances).

This package does not need `torch_ext._C`: on CPU tensors the kernels run
under Triton's interpreter (tests/ops with TORCH_EXT_TEST_DEVICE=cpu).
"""

from . import (  # noqa: F401
    activation,
    advanced_index,
    amax_backward,
    assert_async,
    attention,
    attention_common,
    attention_kernels,
    batch_norm,
    batch_norm_aten,
    batch_norm_sync,
    binary,
    complex,
    convolution,
    copy,
    cross_entropy,
    ctc_loss,
    distance,
    embedding_bag,
    foreach_ops,
    fused,
    group_norm,
    histogram,
    index,
    index_select,
    instance_norm,
    linalg,
    linalg_eigh,
    linalg_ldl,
    linalg_lu,
    linalg_qr,
    linalg_svd,
    loss,
    loss_multilabel,
    loss_nll,
    matmul,
    matmul_dtype,
    matrix_exp,
    normalization,
    optim,
    random,
    random_sampling,
    reduction,
    reduction_arg,
    rnn,
    scan,
    search,
    segment,
    selection,
    shape,
    softmax,
    sort,
    special,
    special_bessel,
    polynomial,
    special_gamma,
    statistics,
    ternary,
    unary,
    unique,
    weight_norm,
)
from .pooling import adaptive, fractional, pool2d, pool3d  # noqa: F401
from .resample import antialias, grid_sample_2d, grid_sample_3d, linear, nearest, padding  # noqa: F401
from ._declare import KERNELS, KERNEL_INFO, kernel
from ._pointwise import is_pointwise_iter

# Importing a family declares its kernels (@kernel) into KERNELS.


def _declare_call_numbers():
    """Tells the launch-plan layer which arguments are per-call numbers, and which ops
    are size-generic."""
    import sys

    c_ext = sys.modules.get("torch_ext._C")
    if c_ext is None or not hasattr(c_ext, "_plan_numbers"):
        return
    shapes = hasattr(c_ext, "_plan_shapes")
    for name, info in KERNEL_INFO.items():
        if info.get("numbers"):
            c_ext._plan_numbers(name, list(info["numbers"]))
        if info.get("shapes") and shapes:  # whichever path C++ calls it from
            c_ext._plan_shapes(name, size_args=list(info.get("size_args", ())))
            c_ext._plan_shapes(name, iterator=True)
        if shapes and is_pointwise_iter(KERNELS[name]):
            c_ext._plan_shapes(name, iterator=True)


_declare_call_numbers()


__all__ = ["KERNELS", "KERNEL_INFO", "kernel"]
