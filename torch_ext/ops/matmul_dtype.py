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


def _dims(name, t, dim):
    if t.dim() != dim:
        raise RuntimeError(f"torch_ext: {name} expects {dim}-d operands, got {t.dim()}-d")


@kernel()
def mm_dtype(self: torch.Tensor, mat2: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    for t in (self, mat2):
        _dims("mm", t, 2)
    out = _result("mm", self, mat2, out_dtype, (sizes(self)[0], sizes(mat2)[1]))
    _bmm(as3(self), as3(mat2), as3(out))
    return out


@kernel()
def bmm_dtype(self: torch.Tensor, mat2: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    for t in (self, mat2):
        _dims("bmm", t, 3)
    out = _result("bmm", self, mat2, out_dtype, (self.shape[0], self.shape[1], mat2.shape[2]))
    _bmm(self, mat2, out)
    return out


@kernel()
def addmm_dtype(
    self: torch.Tensor,
    mat1: torch.Tensor,
    mat2: torch.Tensor,
    out_dtype: torch.dtype,
    beta: Scalar = 1,
    alpha: Scalar = 1,
) -> torch.Tensor:
    for t in (mat1, mat2):
        _dims("addmm", t, 2)
    out = _result("addmm", mat1, mat2, out_dtype, (mat1.shape[0], mat2.shape[1]))
    bias = as3(self, (1, mat1.shape[0], mat2.shape[1]))
    _bmm(as3(mat1), as3(mat2), as3(out), bias, alpha, beta)
    return out


@kernel()
def baddbmm_dtype(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    out_dtype: torch.dtype,
    beta: Scalar = 1,
    alpha: Scalar = 1,
) -> torch.Tensor:
    for t in (batch1, batch2):
        _dims("baddbmm", t, 3)
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    out = _result("baddbmm", batch1, batch2, out_dtype, shape)
    _bmm(batch1, batch2, out, as3(self, shape), alpha, beta)
    return out
