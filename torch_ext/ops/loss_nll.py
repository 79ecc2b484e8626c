"""Negative log-likelihood losses: nll_loss forward/backward (structured impls, (2)) and
nll_loss2d (the 1-d kernels over (N*H*W, C) rows); cross entropy reaches them through
log_softmax.

  nll_loss_forward.output impl: (self, target, weight?, reduction, ignore_index,
                                 output, total_weight)
  nll_loss_backward.grad_input impl: (grad_output, self, target, weight?,
                                 reduction, ignore_index, total_weight, grad_input)
reduction: 0 none, 1 mean, 2 sum.
"""

import torch
import triton
import triton.language as tl

from ._common import float_acc, tl_float_acc
from . import _bounds
from ._launch import cdiv, launch
from .copy import copy_kernel, fill_kernel
from .reduction import SUM, reduce_into
from ._common import contiguous
from ._common import block_for
from ._declare import kernel
from ._symbolic import empty, sizes

NONE, MEAN, SUM_RED = 0, 1, 2


@triton.jit
def _target_weight(
    target, weight, n, mask, ignore_index, C, flag, HAS_W: tl.constexpr, ACC: tl.constexpr
):
    """Each row's class, whether it counts (not ignore_index, in [0, C): others
    are recorded in flag), and its weight."""
    t = tl.load(target + n, mask=mask, other=0).to(tl.int64)
    valid = mask & (t != ignore_index)
    bad = valid & ((t < 0) | (t >= C))
    _bounds.record(flag, t, bad)
    valid = valid & (bad == 0)
    if HAS_W:
        w = tl.load(weight + t, mask=valid, other=0).to(ACC)
    else:
        w = tl.where(valid, 1.0, 0.0).to(ACC)
    return t, valid, w


@triton.jit
def _nll_kernel(
    x,
    target,
    weight,
    loss,
    wsum,
    N,
    C,
    ignore_index,
    flag,
    HAS_W: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    n = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = n < N
    t, valid, w = _target_weight(target, weight, n, mask, ignore_index, C, flag, HAS_W, ACC)
    v = tl.load(x + n * C + t, mask=valid, other=0).to(ACC)
    tl.store(loss + n, tl.where(valid, -w * v, 0.0).to(loss.dtype.element_ty), mask=mask)
    tl.store(wsum + n, w, mask=mask)


@triton.jit
def _nll_sum_kernel(
    x,
    target,
    weight,
    out,
    total_weight,
    N,
    C,
    ignore_index,
    flag,
    MEAN: tl.constexpr,
    HAS_W: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Reduced nll_loss in one program: the weighted sum of -x[n, t[n]] over
    the batch, the total weight, and (MEAN) their quotient, in one launch."""
    lsum = tl.zeros([BLOCK], ACC)
    wsum = tl.zeros([BLOCK], ACC)
    for start in range(0, N, BLOCK):
        n = start + tl.arange(0, BLOCK).to(tl.int64)
        mask = n < N
        t, valid, w = _target_weight(target, weight, n, mask, ignore_index, C, flag, HAS_W, ACC)
        v = tl.load(x + n * C + t, mask=valid, other=0).to(ACC)
        lsum += tl.where(valid, -w * v, 0.0)
        wsum += tl.where(mask, w, 0.0)
    total = tl.sum(wsum, 0)
    loss = tl.sum(lsum, 0)
    if MEAN:
        loss = loss / total
    tl.store(out, loss.to(out.dtype.element_ty))
    tl.store(total_weight, total.to(total_weight.dtype.element_ty))


@triton.jit
def _nll_bwd_kernel(
    g,
    target,
    weight,
    total_weight,
    gi,
    N,
    C,
    ignore_index,
    flag,
    REDUCTION: tl.constexpr,
    HAS_W: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    n = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = n < N
    t, valid, w = _target_weight(target, weight, n, mask, ignore_index, C, flag, HAS_W, ACC)
    if REDUCTION == 0:
        gv = tl.load(g + n, mask=mask, other=0).to(ACC)
    else:
        gv = tl.load(g + n * 0, mask=mask, other=0).to(ACC)
    if REDUCTION == 1:
        gv = gv / tl.load(total_weight + n * 0, mask=mask, other=1).to(ACC)
    tl.store(gi + n * C + t, (-w * gv).to(gi.dtype.element_ty), mask=valid)


# Reduced losses over at most this many rows take the one-program kernel.
_ONE_PROGRAM_ROWS = 16384


# Sizes through _symbolic: one launch plan per shape class (a new batch or length).
@kernel("nll_loss_forward", shapes=True)
def nll_loss_forward_out(
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    ignore_index: int,
    output: torch.Tensor,
    total_weight: torch.Tensor,
) -> None:
    x = contiguous(self)
    N = sizes(x)[0] if x.dim() == 2 else 1
    C = sizes(x)[-1]
    tgt = contiguous(target.reshape(-1))  # read as a pointer: N elements
    w = contiguous(weight) if weight is not None else None
    acc = float_acc(x.dtype)
    if reduction != NONE and N <= _ONE_PROGRAM_ROWS:
        # Batches of a training step (a few thousand rows): one launch.
        block = block_for(max(N, 1))
        flag = _bounds.new_flag(x.device, message="Target {} is out of bounds.")
        launch(
            _nll_sum_kernel,
            (1,),
            x,
            tgt,
            w if w is not None else x,
            output,
            total_weight,
            N,
            C,
            ignore_index,
            flag,
            MEAN=reduction != SUM_RED,
            HAS_W=w is not None,
            ACC=tl_float_acc(x.dtype),
            BLOCK=block,
        )
        _bounds.check(flag)
        return
    per = output if reduction == NONE and output.is_contiguous() else empty((N,), acc, x.device)
    wsum = empty((N,), acc, x.device)
    if N:
        block = block_for(N)
        flag = _bounds.new_flag(x.device, message="Target {} is out of bounds.")
        launch(
            _nll_kernel,
            (cdiv(N, block),),
            x,
            tgt,
            w if w is not None else x,
            per,
            wsum,
            N,
            C,
            ignore_index,
            flag,
            HAS_W=w is not None,
            ACC=tl_float_acc(x.dtype),
            BLOCK=block,
        )
        _bounds.check(flag)
    if reduction == NONE:
        if per is not output:
            copy_kernel((output,), (per.view(output.shape),))
        fill_kernel((total_weight,), (), total_weight.dtype, 0)
        return
    reduce_into(wsum, None, total_weight, SUM)
    if reduction == SUM_RED:
        reduce_into(per, None, output, SUM)
    else:
        from .binary import div_true

        s = torch.empty((), dtype=per.dtype, device=x.device)
        reduce_into(per, None, s, SUM)
        div_true(s, total_weight, out=output)


@kernel("nll_loss_backward", shapes=True)
def nll_loss_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    ignore_index: int,
    total_weight: torch.Tensor,
    grad_input: torch.Tensor,
) -> None:
    fill_kernel((grad_input,), (), grad_input.dtype, 0)
    N = sizes(self)[0] if self.dim() == 2 else 1
    C = sizes(self)[-1]
    if N == 0:
        return
    gi = (
        grad_input
        if grad_input.is_contiguous()
        else torch.empty(grad_input.shape, dtype=grad_input.dtype, device=grad_input.device)
    )
    if gi is not grad_input:
        fill_kernel((gi,), (), gi.dtype, 0)
    tgt = contiguous(target.reshape(-1))
    w = contiguous(weight) if weight is not None else None
    block = block_for(N)
    flag = _bounds.new_flag(gi.device, message="Target {} is out of bounds.")
    launch(
        _nll_bwd_kernel,
        (cdiv(N, block),),
        contiguous(grad_output),
        tgt,
        w if w is not None else gi,
        total_weight,
        gi,
        N,
        C,
        ignore_index,
        flag,
        REDUCTION=reduction,
        HAS_W=w is not None,
        ACC=tl_float_acc(self.dtype),
        BLOCK=block,
    )
    _bounds.check(flag)
    if gi is not grad_input:
        copy_kernel((grad_input,), (gi,))


# -- nll_loss2d: (N, C, H, W) scores, (N, H, W) targets, through the 1-d kernels
# on the scores with C moved last.


def _check_2d(self, target, weight):
    if self.dim() != 4:
        raise RuntimeError(
            f"only batches of spatial inputs supported (4D tensors), but got input "
            f"of size: {list(self.shape)}"
        )
    if target.dim() != 3:
        raise RuntimeError(
            f"only batches of spatial targets supported (3D tensors) but got targets "
            f"of size: {list(target.shape)}"
        )
    if (self.shape[0], *self.shape[2:]) != tuple(target.shape):
        raise RuntimeError(
            f"input and target batch or spatial sizes don't match: target "
            f"{list(target.shape)}, input {list(self.shape)}"
        )
    if weight is not None and weight.numel() != self.shape[1]:
        raise RuntimeError(
            f"weight tensor should be defined either for all {self.shape[1]} classes "
            f"or no classes but got weight tensor of shape: {list(weight.shape)}"
        )


def _rows(self):
    return self.movedim(1, -1).reshape(-1, self.shape[1])


@kernel()
def nll_loss2d_forward_out(
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    ignore_index: int,
    output: torch.Tensor,
    total_weight: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    _check_2d(self, target, weight)
    shape = list(target.shape) if reduction == NONE else []
    if list(output.shape) != shape:
        output.resize_(shape)
    if list(total_weight.shape):
        total_weight.resize_([])
    rows = _rows(self)
    nll_loss_forward_out(
        rows,
        target.reshape(-1),
        weight,
        reduction,
        ignore_index,
        output.view(-1) if reduction == NONE else output,
        total_weight,
    )
    return output, total_weight


@kernel()
def nll_loss2d_forward(
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    ignore_index: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    output = torch.empty(0, dtype=self.dtype, device=self.device)
    total_weight = torch.empty([], dtype=self.dtype, device=self.device)
    return nll_loss2d_forward_out(
        self, target, weight, reduction, ignore_index, output, total_weight
    )


@kernel()
def nll_loss2d_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    ignore_index: int,
    total_weight: torch.Tensor,
    grad_input: torch.Tensor,
) -> torch.Tensor:
    _check_2d(self, target, weight)
    if list(grad_input.shape) != list(self.shape):
        grad_input.resize_(self.shape)
    gi = torch.empty(_rows(self).shape, dtype=self.dtype, device=self.device)
    g = grad_output.reshape(-1) if reduction == NONE else grad_output
    nll_loss_backward_out(
        g, gi, target.reshape(-1), weight, reduction, ignore_index, total_weight, gi
    )
    n, c = self.shape[0], self.shape[1]
    copy_kernel((grad_input,), (gi.view(n, *self.shape[2:], c).movedim(-1, 1),))
    return grad_input


@kernel()
def nll_loss2d_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    ignore_index: int,
    total_weight: torch.Tensor,
) -> torch.Tensor:
    grad_input = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    return nll_loss2d_backward_out(
        grad_output, self, target, weight, reduction, ignore_index, total_weight, grad_input
    )
