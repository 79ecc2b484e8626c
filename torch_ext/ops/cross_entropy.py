"""Cross entropy over class indices, fused: torch_ext::cross_entropy and its backward
(plain ops (3)), what aten::cross_entropy_loss runs on privateuseone through its
autograd kernel (csrc/aten/CrossEntropy.cpp) for a (N, C) input, class-index targets, no
class weights and no label smoothing; other calls take PyTorch's composite
(log_softmax + nll_loss).

  torch_ext::cross_entropy(input, target, reduction, ignore_index) -> (loss, lse, count)
  torch_ext::cross_entropy_backward(grad_out, input, target, lse, count, reduction,
                                    ignore_index) -> grad_input

A program per row reads its C logits once: an online maximum and sum give the row's
log-sum-exp (kept for the backward, N floats) and its loss lse - x[target] (0 for
ignore_index); for mean and sum the last row program to finish (an arrival counter)
adds the N row losses in order (deterministic): one launch, where a second kernel's
launch and serial loads cost a few percent of a 4096 x 32768 bf16 forward. The backward writes (softmax(x) - onehot(target)) * g per row from x and
the saved lse, one read and one write of the logits. The composite writes the (N, C)
log-probabilities and reads them back, and its backward materialises a dense (N, C)
gradient of nll_loss first: for GPT-2's 4096 x 50257 float32 logits, 0.8 GB each.
reduction: 0 none, 1 mean, 2 sum. count: the rows that count (float32, 0-dim).
"""

import torch
import triton
import triton.language as tl

from ..backends import spec
from . import _bounds, _math
from ._common import arrive, contiguous
from ._declare import kernel
from ._launch import arrival_counters, launch
from ._symbolic import empty, sizes

NONE, MEAN, SUM = 0, 1, 2
_BLOCK = 4096  # logits per step of a row
_REDUCE_BLOCK = 2048  # row losses a step of the last program's sum


@triton.jit
def _ce_rows_kernel(x, target, loss, lse, out, count, arrivals, N, C, sxn, ignore_index, flag,
                    REDUCE: tl.constexpr, MEAN: tl.constexpr, BLOCK: tl.constexpr,
                    RBLOCK: tl.constexpr):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    one = row + tl.arange(0, 1)  # the row's target, loss and lse as 1-element blocks
    base = x + row * sxn
    cols = tl.arange(0, BLOCK)
    # The row's running maximum and sum of exponentials (1-element blocks), rescaled once
    # per tile: one exp per logit (a per-lane online update took two, which bounded the
    # kernel by the exponentials: bf16 logits read 45% of copy bandwidth on an H200).
    m = tl.full([1], -float("inf"), tl.float32)
    s = tl.zeros([1], tl.float32)
    for c0 in range(0, C, BLOCK):
        v = tl.load(base + c0 + cols, mask=c0 + cols < C, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(v, 0))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * _math.exp_ftz(m - m_safe) + tl.sum(_math.exp_diff(v, m_safe, x), 0)
        m = m_new
    row_lse = tl.where(m == -float("inf"), 0.0, m) + tl.log(s)
    t = tl.load(target + one).to(tl.int64)
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= C))
    _bounds.record(flag, t, bad)
    valid = valid & (bad == 0)
    xt = tl.load(base + t, mask=valid, other=0).to(tl.float32)
    tl.store(lse + one, row_lse + tl.zeros([1], tl.float32))
    if REDUCE:
        # float32 scratch: a row that does not count stores -0.0, which adds nothing and
        # marks it (a counted row's loss lse - x[target] is +0.0 or more, as lse >= max)
        tl.store(loss + one, tl.where(valid, row_lse - xt, _math.negative_zero()))
        if arrive(arrivals, 0, N):
            _ce_total(loss, out, count, N, MEAN, RBLOCK)
    else:
        v = tl.where(valid, row_lse - xt, 0.0)
        if loss.dtype.element_ty == tl.bfloat16:
            v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
        tl.store(loss + one, v.to(loss.dtype.element_ty))
        if row == 0:
            tl.store(count, 0.0)


@triton.jit
def _ce_total(loss, out, count, N, MEAN: tl.constexpr, RBLOCK: tl.constexpr):
    """The last row program: the N row losses added in order (deterministic), the rows
    that count (those not marked -0.0), and their mean or sum into `out`."""
    total = tl.zeros([RBLOCK], tl.float32)
    valid = tl.zeros([RBLOCK], tl.float32)
    for n0 in range(0, N, RBLOCK):
        n = n0 + tl.arange(0, RBLOCK)
        inside = n < N
        v = tl.load(loss + n, mask=inside, other=0.0, cache_modifier=".cg")
        total += v
        valid += tl.where(inside & (v.to(tl.int32, bitcast=True) != -(2**31)), 1.0, 0.0)
    s = tl.sum(total, 0)
    k = tl.sum(valid, 0)
    if MEAN:
        s = s / k
    if out.dtype.element_ty == tl.bfloat16:
        s = s.to(tl.float32)
    tl.store(out, s.to(out.dtype.element_ty))
    tl.store(count, k)


@triton.jit
def _ce_backward_kernel(g, x, target, lse, count, gx, C, sxn, sgn, sgxn, ignore_index,
                        REDUCTION: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    one = row + tl.arange(0, 1)
    t = tl.load(target + one).to(tl.int64)
    valid = (t != ignore_index) & (t >= 0) & (t < C)
    if REDUCTION == 0:
        gr = tl.load(g + one * sgn).to(tl.float32)
    else:
        gr = tl.load(g + one * 0).to(tl.float32)
        if REDUCTION == 1:
            gr = gr / tl.load(count + one * 0)
    gr = tl.where(valid, gr, 0.0)
    row_lse = tl.load(lse + one)
    cols = tl.arange(0, BLOCK)
    for c0 in range(0, C, BLOCK):
        c = c0 + cols
        v = tl.load(x + row * sxn + c, mask=c < C, other=0).to(tl.float32)
        d = _math.exp_diff(v, row_lse, x) - tl.where(c == t, 1.0, 0.0)
        r = gr * d
        if gx.dtype.element_ty == tl.bfloat16:
            r = r.to(tl.float32)
        tl.store(gx + row * sgxn + c, r.to(gx.dtype.element_ty), mask=c < C)


def _block(C, itemsize=None):
    """Logits a step of a row: _BLOCK, or the driver's for the forward over logits of
    `itemsize` bytes (`cross_entropy_block`), at most the row padded to a power of 2."""
    block = (spec("cross_entropy_block", itemsize) if itemsize else None) or _BLOCK
    return min(block, max(16, triton.next_power_of_2(C)))


@kernel(shapes=True)
def cross_entropy_fwd(
    input: torch.Tensor, target: torch.Tensor, reduction: int, ignore_index: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """torch_ext::cross_entropy -> (loss, lse, count) (module doc)."""
    x = contiguous(input)
    t = contiguous(target)
    N, C = sizes(x)
    if sizes(t)[0] != N:
        raise ValueError(
            f"Expected input batch_size ({N}) to match target batch_size ({sizes(t)[0]})."
        )
    rows = empty((N,), x.dtype if reduction == NONE else torch.float32, x.device)
    lse = empty((N,), torch.float32, x.device)
    count = empty((), torch.float32, x.device)
    out = rows if reduction == NONE else empty((), x.dtype, x.device)
    if N:
        # one launch: the last row program to finish adds the rows (module doc)
        flag = _bounds.new_flag(x.device, message="Target {} is out of bounds.")
        launch(
            _ce_rows_kernel, (N,), x, t, rows, lse, out, count,
            arrival_counters("cross_entropy", x.device), N, C, C, ignore_index, flag,
            REDUCE=reduction != NONE, MEAN=reduction == MEAN, BLOCK=_block(C, x.element_size()),
            RBLOCK=_REDUCE_BLOCK,
        )  # fmt: skip
        _bounds.check(flag)
    elif reduction == NONE:
        count.fill_(0)
    else:  # no rows: the mean of nothing is nan, the sum 0, as PyTorch's
        count.fill_(0)
        out.fill_(float("nan") if reduction == MEAN else 0.0)
    return out, lse, count


@kernel(shapes=True)
def cross_entropy_bwd(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    target: torch.Tensor,
    lse: torch.Tensor,
    count: torch.Tensor,
    reduction: int,
    ignore_index: int,
) -> torch.Tensor:
    """torch_ext::cross_entropy_backward -> grad_input (module doc)."""
    x = contiguous(input)
    t = contiguous(target)
    N, C = sizes(x)
    gx = empty((N, C), x.dtype, x.device)
    if N:
        g = grad_out if grad_out.dim() else grad_out.reshape(1)
        sg = g.stride(0) if reduction == NONE else 0
        launch(
            _ce_backward_kernel, (N,), g, x, t, lse, count, gx, C, C, sg, C, ignore_index,
            REDUCTION=reduction, BLOCK=_block(C),
        )  # fmt: skip
    return gx
