"""multilabel_margin_loss (PyTorch's kernels are CPU/CUDA-specific):

  multilabel_margin_loss_forward(self, target, reduction) -> (output, is_target)
  multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target)

Per sample row x (C classes), the targets are target's entries up to the first -1;
  loss = sum_{j in targets} sum_{i not a target} max(0, 1 - x[j] + x[i]) / C,
then none / mean over rows / sum. One program per row: a first pass over the targets
marks them (is_target, as float, as PyTorch returns it), a second sums the hinge
terms or, backward, counts the active ones for each class and target.
"""

import torch
import triton
import triton.language as tl

from ._common import contiguous, tl_float_acc, write_result
from ._declare import kernel
from ._launch import launch, next_pow2


@triton.jit
def _mlm_kernel(
    x, target, is_t_out, out, gout, gin, C, gscale,
    BWD: tl.constexpr, G_PER_ROW: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    ok = cols < C
    xr = tl.load(x + row * C + cols, mask=ok, other=0).to(ACC)
    is_t = cols < 0
    alive = tl.program_id(0) * 0 + 1
    for j in range(0, C):
        t = tl.load(target + row * C + j)
        alive = alive & (t >= 0).to(tl.int32)
        is_t = is_t | ((cols == t) & (alive != 0))
    loss = tl.zeros((BLOCK,), ACC)
    g = tl.zeros((BLOCK,), ACC)
    alive = tl.program_id(0) * 0 + 1
    for j in range(0, C):
        t = tl.load(target + row * C + j)
        alive = alive & (t >= 0).to(tl.int32)
        xj = tl.sum(tl.where(cols == t, xr, 0.0), 0)
        z = 1.0 - xj + xr
        on = ok & ~is_t & (z > 0) & (alive != 0)
        if BWD:
            g += on.to(ACC)
            g -= tl.where(cols == t, tl.sum(on.to(ACC), 0), 0.0)
        else:
            loss += tl.where(on, z, 0.0)
    if BWD:
        if G_PER_ROW:
            scale = tl.load(gout + row).to(ACC) * gscale
        else:
            scale = tl.load(gout).to(ACC) * gscale
        v = g * scale / C
        if gin.dtype.element_ty == tl.bfloat16:
            v = v.to(tl.float32)
        tl.store(gin + row * C + cols, v.to(gin.dtype.element_ty), mask=ok)
    else:
        tl.store(is_t_out + row * C + cols, is_t.to(is_t_out.dtype.element_ty), mask=ok)
        tl.store(out + row, tl.sum(loss, 0) / C)


def _rows(self, target):
    nonempty = self.dim() == 0 or self.shape[-1] != 0  # rows of at least one class
    if self.dim() > 2 or target.dim() > 2 or not nonempty:
        raise RuntimeError(
            f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(self.shape)}"
        )
    C = self.shape[-1] if self.dim() else 1
    N = self.shape[0] if self.dim() == 2 else 1
    if list(target.shape) != list(self.shape):
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(self.shape)}"
        )
    return N, C


@kernel()
def multilabel_margin_loss_forward(
    self: torch.Tensor, target: torch.Tensor, reduction: int
) -> tuple[torch.Tensor, torch.Tensor]:
    N, C = _rows(self, target)
    x = contiguous(self)
    tgt = contiguous(target.to(torch.int64))
    is_t = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    per_row = torch.empty(N, dtype=torch.float32 if self.dtype != torch.float64 else self.dtype,
                          device=self.device)  # fmt: skip
    if N and C:
        launch(
            _mlm_kernel, (N,), x, tgt, is_t, per_row, x, x, C, 1.0,
            BWD=False, G_PER_ROW=False, ACC=tl_float_acc(self.dtype), BLOCK=next_pow2(C),
        )  # fmt: skip
    else:
        per_row.zero_()
        is_t.zero_()
    if reduction == 0:
        out = per_row.to(self.dtype)
        return (out.reshape(()) if self.dim() <= 1 else out), is_t
    total = per_row.sum()
    if reduction == 1:
        total = total / N
    return total.to(self.dtype), is_t


@kernel()
def multilabel_margin_loss_forward_out(
    self: torch.Tensor,
    target: torch.Tensor,
    reduction: int,
    output: torch.Tensor,
    is_target: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    out, is_t = multilabel_margin_loss_forward(self, target, reduction)
    write_result(output, out)
    write_result(is_target, is_t)
    return output, is_target


@kernel()
def multilabel_margin_loss_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    reduction: int,
    is_target: torch.Tensor,
) -> torch.Tensor:
    N, C = _rows(self, target)
    gin = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    if N == 0 or C == 0:
        return gin.zero_()
    per_row = reduction == 0 and grad_output.dim() > 0
    launch(
        _mlm_kernel, (N,), contiguous(self), contiguous(target.to(torch.int64)), gin, gin,
        contiguous(grad_output), gin, C, 1.0 / N if reduction == 1 else 1.0,
        BWD=True, G_PER_ROW=per_row, ACC=tl_float_acc(self.dtype), BLOCK=next_pow2(C),
    )  # fmt: skip
    return gin


@kernel()
def multilabel_margin_loss_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    reduction: int,
    is_target: torch.Tensor,
    grad_input: torch.Tensor,
) -> torch.Tensor:
    write_result(grad_input, multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target))  # fmt: skip
    return grad_input
