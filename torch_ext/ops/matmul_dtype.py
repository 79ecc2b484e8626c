"""Matrix products with an `out_dtype` (torch.mm / bmm / addmm / baddbmm(...,
out_dtype=)): fp16 and bf16 operands multiplied into a float32 result (or the operands'
own dtype), as CUDA's. The product kernels of matmul.py accumulate in float32 and store
in the output's dtype; these products take their plain kernel (not tuned)."""

import torch

from ._declare import Scalar, kernel
from ._symbolic import sizes
from .matmul import _bmm, as3


def _result(name, a, b, out_dtype, shape):
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"torch_ext: {name} expects operands of one dtype, got {a.dtype} and {b.dtype}"
        )
    if out_dtype != a.dtype and not (
        out_dtype == torch.float32 and a.dtype in (torch.float16, torch.bfloat16)
    ):
        raise RuntimeError(
            f"torch_ext: {name}'s out_dtype must be the operands' dtype, or float32 for "
            f"float16/bfloat16 operands; got {out_dtype} for {a.dtype}"
        )
    if not a.dtype.is_floating_point:
        raise NotImplementedError(f"torch_ext: matrix products of {a.dtype} are not supported")
    return torch.empty(shape, dtype=out_dtype, device=a.device)


def _product(name, a, b, out_dtype, dim, bias=None, alpha=1.0, beta=0.0):
    """out = alpha * a @ b (+ beta * bias) in `out_dtype`, a and b `dim`-d."""
    for t in (a, b):
        if t.dim() != dim:
            raise RuntimeError(f"torch_ext: {name} expects {dim}-d operands, got {t.dim()}-d")
    shape = (sizes(a)[0], sizes(b)[1]) if dim == 2 else (a.shape[0], a.shape[1], b.shape[2])
    out = _result(name, a, b, out_dtype, shape)
    if dim == 2:
        shape = (1, a.shape[0], b.shape[1])
    _bmm(as3(a), as3(b), as3(out), None if bias is None else as3(bias, shape), alpha, beta)
    return out


@kernel()
def mm_dtype(self: torch.Tensor, mat2: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    return _product("mm", self, mat2, out_dtype, 2)


@kernel()
def bmm_dtype(self: torch.Tensor, mat2: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    return _product("bmm", self, mat2, out_dtype, 3)


@kernel()
def addmm_dtype(
    self: torch.Tensor,
    mat1: torch.Tensor,
    mat2: torch.Tensor,
    out_dtype: torch.dtype,
    beta: Scalar = 1,
    alpha: Scalar = 1,
) -> torch.Tensor:
    return _product("addmm", mat1, mat2, out_dtype, 2, self, alpha, beta)


@kernel()
def baddbmm_dtype(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    out_dtype: torch.dtype,
    beta: Scalar = 1,
    alpha: Scalar = 1,
) -> torch.Tensor:
    return _product("baddbmm", batch1, batch2, out_dtype, 3, self, alpha, beta)
