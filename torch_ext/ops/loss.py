"""Losses: nll_loss forward/backward (structured impls, (2)), mse_loss
forward ((2): mse_loss.out impl (self, target, reduction, out)) and backward
((3): mse_loss_backward(grad_output, self, target, reduction)).

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
from .activation import mse, mse_backward
from .copy import copy_kernel, fill_kernel
from .reduction import SUM, reduce_into
from ._common import contiguous
from ._common import block_for
from . import _math
from ._pointwise import pointwise
from ._declare import Scalar, kernel
from .activation import _check_float, _outside_unit

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


@kernel("nll_loss_forward")
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
    N = x.shape[0] if x.dim() == 2 else 1
    C = x.shape[-1]
    tgt = contiguous(target.reshape(-1))
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
    per = (
        output
        if reduction == NONE and output.is_contiguous()
        else torch.empty((N,), dtype=acc, device=x.device)
    )
    wsum = torch.empty((N,), dtype=acc, device=x.device)
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


@kernel("nll_loss_backward")
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
    N = self.shape[0] if self.dim() == 2 else 1
    C = self.shape[-1]
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


def mse_loss_out(self, target, reduction, out):
    if reduction == NONE:
        mse(self, target, out=out)
        return
    sq = mse(self, target)
    n = sq.numel()
    reduce_into(
        sq, None, out, SUM, scale=(1.0 / n if n else float("nan")) if reduction == MEAN else 1.0
    )


def mse_loss_backward(grad_output, self, target, reduction):
    norm = 2.0 / self.numel() if reduction == MEAN else 2.0
    return mse_backward(self, target, grad_output, norm)


def mse_loss_backward_out(grad_output, self, target, reduction, grad_input):
    norm = 2.0 / self.numel() if reduction == MEAN else 2.0
    mse_backward(self, target, grad_output, norm, out=grad_input)


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


# -- multi_margin_loss: composed from our kernels --------------------------------


def _margin_terms(self, target, p, margin):
    """(x (N, C), target (N,), per-element active terms before the power, mask)."""
    if p not in (1, 2):
        raise RuntimeError("only p == 1 and p == 2 supported")
    if (
        self.dim() > 2
        or (self.dim() == 2 and target.dim() != 1)
        or (self.dim() < 2 and target.dim() > 1)
    ):
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(self.shape)}"
        )
    x = self.reshape(-1, self.shape[-1] if self.dim() else 1)
    y = target.reshape(-1).long()
    if y.numel() != x.shape[0]:
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(self.shape)}"
        )
    xy = torch.gather(x, 1, y.unsqueeze(1))
    m = float(margin) - xy + x
    keep = m > 0
    keep.scatter_(1, y.unsqueeze(1), False)
    return x, y, m, keep


@kernel()
def multi_margin_loss(
    self: torch.Tensor,
    target: torch.Tensor,
    p: Scalar = 1,
    margin: Scalar = 1,
    weight: torch.Tensor | None = None,
    reduction: int = MEAN,
) -> torch.Tensor:
    x, y, m, keep = _margin_terms(self, target, int(p), margin)
    z = torch.where(keep, m * m if int(p) == 2 else m, torch.zeros_like(m))
    if weight is not None:
        z = z * weight.index_select(0, y).unsqueeze(1).to(z.dtype)
    loss = z.sum(1) / x.shape[1]
    if reduction == NONE:
        return loss.reshape(target.shape) if self.dim() == 2 else loss.reshape([])
    return loss.mean() if reduction == MEAN else loss.sum()


@kernel()
def multi_margin_loss_out(
    self: torch.Tensor,
    target: torch.Tensor,
    p: Scalar,
    margin: Scalar,
    weight: torch.Tensor | None,
    reduction: int,
    out: torch.Tensor,
) -> torch.Tensor:
    r = multi_margin_loss(self, target, p, margin, weight, reduction)
    out.resize_(r.shape)
    copy_kernel((out,), (r,))
    return out


@kernel()
def multi_margin_loss_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    p: Scalar,
    margin: Scalar,
    weight: torch.Tensor | None = None,
    reduction: int = MEAN,
) -> torch.Tensor:
    x, y, m, keep = _margin_terms(self, target, int(p), margin)
    d = torch.where(keep, 2 * m if int(p) == 2 else torch.ones_like(m), torch.zeros_like(m))
    if weight is not None:
        d = d * weight.index_select(0, y).unsqueeze(1).to(d.dtype)
    d = d / x.shape[1]
    d.scatter_(1, y.unsqueeze(1), -d.sum(1, keepdim=True))
    g = grad_output.reshape(-1, 1) if reduction == NONE else grad_output.reshape(1, 1)
    if reduction == MEAN:
        g = g / x.shape[0]
    return (d * g.to(d.dtype)).reshape(self.shape)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def smooth_l1(x, target, beta):
    z = tl.abs(x - target)
    return tl.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)


@kernel()
@pointwise(num_inputs=3)
@triton.jit
def smooth_l1_backward(x, target, grad, norm, beta):
    d = x - target
    r = tl.where(d >= beta, norm * grad, norm * d * grad / beta)
    return tl.where(d <= -beta, -norm * grad, r)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def huber(x, target, delta):
    z = tl.abs(x - target)
    return tl.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))


@kernel()
@pointwise(num_inputs=3)
@triton.jit
def huber_backward(x, target, grad, norm, delta):
    d = x - target
    r = tl.where(d >= delta, norm * grad * delta, norm * d * grad)
    return tl.where(d <= -delta, -norm * grad * delta, r)


@pointwise(num_inputs=3)
@triton.jit
def _bce(x, y, w):
    # -w (y log x + (1 - y) log(1 - x)), each log clamped at -100 (PyTorch).
    lx = tl.maximum(tl.log(x), -100.0)
    l1x = tl.maximum(_math.log1p(-x), -100.0)
    return w * ((y - 1.0) * l1x - y * lx)


@pointwise(num_inputs=4)
@triton.jit
def _bce_backward(grad, x, y, w, norm):
    # grad (x - y) / max((1 - x) x, 1e-12), times weight and 1/numel (mean).
    d = tl.maximum((1.0 - x) * x, 1e-12)
    return w * norm * grad * (x - y) / d


def _bce_operands(name, self, target, weight):
    _check_float(name, self, target, weight)
    if target.dtype != self.dtype:
        raise RuntimeError(
            f"{name}: target dtype {target.dtype} differs from input dtype {self.dtype}"
        )
    if target.shape != self.shape:
        if target.numel() != self.numel():
            raise RuntimeError(
                f"{name}: target size {list(target.shape)} does not match input size "
                f"{list(self.shape)}"
            )
        target = target.reshape(self.shape)  # PyTorch squeezes both: same elements in order
    w = 1.0
    if weight is not None:
        try:
            ok = torch.broadcast_shapes(weight.shape, self.shape) == self.shape
        except RuntimeError:
            ok = False
        if not ok:
            raise RuntimeError(
                f"{name}: weight of size {list(weight.shape)} does not broadcast to "
                f"the input size {list(self.shape)}"
            )
        w = weight.expand(self.shape)
    return target, w


def _check_unit(name, what, t):
    if t.numel() and bool(_outside_unit(t).any().item()):
        raise RuntimeError(f"{name}: all elements of {what} should be between 0 and 1")


def _reduce_loss(loss, reduction, out):
    from .reduction import SUM, reduce_into

    n = loss.numel()
    scale = (1.0 / n if n else float("nan")) if reduction == MEAN else 1.0
    reduce_into(loss, None, out, SUM, scale=scale)


def _check_reduction(name, reduction):
    if reduction not in (NONE, MEAN, SUM_RED):
        raise RuntimeError(
            f"{name}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction}"
        )


@kernel()
def binary_cross_entropy_out(
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    out: torch.Tensor,
) -> torch.Tensor:
    name = "binary_cross_entropy"
    _check_reduction(name, reduction)
    target, w = _bce_operands(name, self, target, weight)
    _check_unit(name, "input", self)
    _check_unit(name, "target", target)
    if reduction == NONE:
        out.resize_(self.shape)
        _bce(self, target, w, out=out)
        return out
    loss = _bce(self, target, w)
    out.resize_(())
    _reduce_loss(loss, reduction, out)
    return out


@kernel()
def binary_cross_entropy(
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    reduction: int = MEAN,
) -> torch.Tensor:
    out = torch.empty((), dtype=self.dtype, device=self.device)
    return binary_cross_entropy_out(self, target, weight, reduction, out)


@kernel()
def binary_cross_entropy_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    grad_input: torch.Tensor,
) -> torch.Tensor:
    name = "binary_cross_entropy_backward"
    _check_reduction(name, reduction)
    target, w = _bce_operands(name, self, target, weight)
    norm = 1.0 / self.numel() if reduction == MEAN and self.numel() else 1.0
    grad_input.resize_(self.shape)
    _bce_backward(grad_output.expand(self.shape), self, target, w, norm, out=grad_input)
    return grad_input


@kernel()
def binary_cross_entropy_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    reduction: int = MEAN,
) -> torch.Tensor:
    out = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    return binary_cross_entropy_backward_out(grad_output, self, target, weight, reduction, out)
