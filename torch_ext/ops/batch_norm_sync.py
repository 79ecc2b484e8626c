"""The batch-norm pieces torch.nn.SyncBatchNorm runs between its collectives (and
torch.batch_norm_gather_stats): each rank's statistics (batch_norm_stats), their merge
over the ranks with the running-stat update (batch_norm_gather_stats_with_counts),
normalisation (batch_norm_elemt), and the backward's local sums (batch_norm_backward_reduce)
and input gradient from the all-reduced sums (batch_norm_backward_elemt). The
activation-sized passes are batch_norm.py's kernels (one launch each, any strides,
NCHW and channels_last); the merges over ranks are one small launch each. Statistics
are float32 for fp16/bf16 inputs, as CUDA's."""

import torch
import triton
import triton.language as tl

from ._common import float_acc, stat_dtype, tl_float_acc, write_result
from ._declare import kernel
from ._launch import cdiv, launch, next_pow2
from .batch_norm import (
    _check,
    _empty_like,
    _Plan,
    _view,
    launch_apply,
    launch_dx,
    launch_stats,
    launch_sums,
)

_BC = 128  # channels a program of the merges over ranks


@triton.jit
def _bn_gather_kernel(
    mean, invstd, counts, rmean, rvar, out_mean, out_invstd, W, C, smW, smC, siW, siC, sc,
    momentum, eps, HAS_RUN: tl.constexpr, BC: tl.constexpr,
):  # fmt: skip
    """Each channel's mean and invstd over W ranks' (mean, invstd, count), merged one rank
    at a time (Chan's update of the count, mean and sum of squared deviations); the running
    stats take the unbiased variance. Ranks with count 0 add nothing (SyncBatchNorm
    sends zeros for an empty input)."""
    c = tl.program_id(0) * BC + tl.arange(0, BC)
    cm = c < C
    n = tl.zeros([BC], dtype=tl.float32)
    avg = tl.zeros([BC], dtype=tl.float32)
    m2 = tl.zeros([BC], dtype=tl.float32)
    for j in range(W):
        cnt = tl.load(counts + j * sc).to(tl.float32)
        m = tl.load(mean + j * smW + c * smC, mask=cm, other=0).to(tl.float32)
        inv = tl.load(invstd + j * siW + c * siC, mask=cm, other=1).to(tl.float32)
        total = n + cnt
        share = tl.where(total > 0, cnt / tl.where(total > 0, total, 1.0), 0.0)
        d = m - avg
        m2 += tl.where(cnt > 0, (1.0 / (inv * inv) - eps) * cnt, 0.0) + d * d * n * share
        avg += d * share
        n = total
    tl.store(out_mean + c, avg.to(out_mean.dtype.element_ty), mask=cm)
    tl.store(out_invstd + c, (1.0 / tl.sqrt(m2 / n + eps)).to(out_invstd.dtype.element_ty),
             mask=cm)  # fmt: skip
    if HAS_RUN:
        rm = tl.load(rmean + c, mask=cm, other=0).to(tl.float32)
        rv = tl.load(rvar + c, mask=cm, other=0).to(tl.float32)
        rm = (1 - momentum) * rm + momentum * avg
        rv = (1 - momentum) * rv + momentum * (m2 / (n - 1))
        tl.store(rmean + c, rm.to(rmean.dtype.element_ty), mask=cm)
        tl.store(rvar + c, rv.to(rvar.dtype.element_ty), mask=cm)


@triton.jit
def _bn_sync_sums_kernel(sum_dy, sum_dy_xmu, invstd, counts, W, sc, out, C, ACC: tl.constexpr,
                         BC: tl.constexpr, BW: tl.constexpr):  # fmt: skip
    """out[0|1, c] = sum_dy / M and sum_dy_xmu * invstd / M, M the ranks' counts added:
    the sums launch_dx takes (over a count of 1)."""
    c = tl.program_id(0) * BC + tl.arange(0, BC)
    cm = c < C
    total = tl.zeros([BW], dtype=ACC)
    for j0 in range(0, W, BW):
        j = j0 + tl.arange(0, BW)
        total += tl.load(counts + j * sc, mask=j < W, other=0).to(ACC)
    m = tl.sum(total, 0)
    sdy = tl.load(sum_dy + c, mask=cm, other=0).to(ACC)
    sxm = tl.load(sum_dy_xmu + c, mask=cm, other=0).to(ACC)
    inv = tl.load(invstd + c, mask=cm, other=0).to(ACC)
    tl.store(out + c, sdy / m, mask=cm)
    tl.store(out + C + c, sxm * inv / m, mask=cm)


def _channels(name, t, C):
    if t is not None and t.numel() != C:
        raise RuntimeError(f"torch_ext: {name} expects {C} channel values, got shape "
                           f"{tuple(t.shape)}")  # fmt: skip


@kernel()
def batch_norm_stats(input: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    _check(input)
    x, st = _view(input)
    C = x.shape[1]
    sd = stat_dtype(x.dtype)
    mean = torch.empty((C,), dtype=sd, device=x.device)
    invstd = torch.empty((C,), dtype=sd, device=x.device)
    if x.numel() == 0:  # no elements: no statistics (SyncBatchNorm sends a count of 0)
        return mean.fill_(float("nan")), invstd.fill_(float("nan"))
    launch_stats(_Plan(x, [st]), x, None, None, mean, invstd, 0.0, eps)
    return mean, invstd


def _gather(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    if mean.dim() != 2 or invstd.shape != mean.shape:
        raise RuntimeError(
            "torch_ext: batch_norm_gather_stats expects mean and invstd of shape (ranks, "
            f"channels), got {tuple(mean.shape)} and {tuple(invstd.shape)}"
        )
    W, C = mean.shape
    if counts.numel() != W:
        raise RuntimeError(f"torch_ext: batch_norm_gather_stats expects {W} counts, got "
                           f"{counts.numel()}")  # fmt: skip
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        _channels(f"batch_norm_gather_stats's {name}", t, C)
    counts = counts.reshape(-1)
    out_mean = torch.empty((C,), dtype=mean.dtype, device=mean.device)
    out_invstd = torch.empty((C,), dtype=mean.dtype, device=mean.device)
    has_run = running_mean is not None and running_var is not None
    if C:
        launch(
            _bn_gather_kernel, (cdiv(C, _BC),), mean, invstd, counts,
            running_mean if has_run else mean, running_var if has_run else mean,
            out_mean, out_invstd, W, C, *mean.stride(), *invstd.stride(), counts.stride(0),
            float(momentum), float(eps), HAS_RUN=has_run, BC=_BC,
        )  # fmt: skip
    return out_mean, out_invstd


@kernel()
def batch_norm_gather_stats_with_counts(
    input: torch.Tensor,
    mean: torch.Tensor,
    invstd: torch.Tensor,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    momentum: float,
    eps: float,
    counts: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    return _gather(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


@kernel()
def batch_norm_gather_stats(
    input: torch.Tensor,
    mean: torch.Tensor,
    invstd: torch.Tensor,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    momentum: float,
    eps: float,
    count: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    counts = torch.full((mean.shape[0] if mean.dim() else 1,), float(count), device=mean.device)
    return _gather(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


@kernel()
def batch_norm_elemt(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    mean: torch.Tensor,
    invstd: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    _check(input)
    x, st = _view(input)
    C = x.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("mean", mean), ("invstd", invstd)):
        _channels(f"batch_norm_elemt's {name}", t, C)
    y, yst = _empty_like(x)
    if x.numel():
        launch_apply(_Plan(x, [st, yst]), x, y, weight, bias, mean, invstd, False, eps)
    return y


@kernel()
def batch_norm_elemt_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    mean: torch.Tensor,
    invstd: torch.Tensor,
    eps: float,
    out: torch.Tensor,
) -> torch.Tensor:
    write_result(out, batch_norm_elemt(input, weight, bias, mean, invstd, eps))
    return out


@kernel()
def batch_norm_backward_reduce(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    mean: torch.Tensor,
    invstd: torch.Tensor,
    weight: torch.Tensor | None,
    input_g: bool,
    weight_g: bool,
    bias_g: bool,
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    _check(input)
    x, st = _view(input)
    g, gst = _view(grad_out)
    C = x.shape[1]
    if g.shape != x.shape:
        raise RuntimeError(f"torch_ext: batch_norm_backward_reduce expects grad_out of the "
                           f"input's shape {tuple(x.shape)}, got {tuple(g.shape)}")  # fmt: skip
    for name, t in (("mean", mean), ("invstd", invstd), ("weight", weight)):
        _channels(f"batch_norm_backward_reduce's {name}", t, C)
    pdt = weight.dtype if weight is not None else mean.dtype
    dw = torch.empty((C,), dtype=pdt, device=x.device) if weight_g else None
    db = torch.empty((C,), dtype=pdt, device=x.device) if bias_g else None
    if not (input_g or weight_g or bias_g):
        return None, None, None, None
    sums = torch.empty((2, C), dtype=float_acc(x.dtype), device=x.device)
    if x.numel() == 0 or C == 0:
        sums.zero_()
        for t in (dw, db):
            if t is not None:
                t.zero_()
    else:
        launch_sums(_Plan(x, [st, gst]), g, x, mean, invstd, False, sums, dw, db, 0.0)
    if not input_g:
        return None, None, dw, db
    # sum_dy, and sum_dy_xmu from the kernel's invstd * sum(dy * (x - mean))
    sum_dy = sums[0].to(mean.dtype)
    sum_dy_xmu = torch.div(sums[1], invstd).to(mean.dtype)
    return sum_dy, sum_dy_xmu, dw, db


@kernel()
def batch_norm_backward_elemt(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    mean: torch.Tensor,
    invstd: torch.Tensor,
    weight: torch.Tensor | None,
    sum_dy: torch.Tensor,
    sum_dy_xmu: torch.Tensor,
    count: torch.Tensor,
) -> torch.Tensor:
    _check(input)
    x, st = _view(input)
    g, gst = _view(grad_out)
    C = x.shape[1]
    if g.shape != x.shape:
        raise RuntimeError(f"torch_ext: batch_norm_backward_elemt expects grad_out of the "
                           f"input's shape {tuple(x.shape)}, got {tuple(g.shape)}")  # fmt: skip
    for name, t in (("mean", mean), ("invstd", invstd), ("weight", weight), ("sum_dy", sum_dy),
                    ("sum_dy_xmu", sum_dy_xmu)):  # fmt: skip
        _channels(f"batch_norm_backward_elemt's {name}", t, C)
    dx, ost = _empty_like(x)
    if x.numel() == 0:
        return dx
    counts = count.reshape(-1)
    sums = torch.empty((2, C), dtype=float_acc(x.dtype), device=x.device)
    W = counts.numel()
    launch(
        _bn_sync_sums_kernel, (cdiv(C, _BC),), sum_dy, sum_dy_xmu, invstd, counts, W,
        counts.stride(0) if W else 1, sums, C, ACC=tl_float_acc(x.dtype), BC=_BC,
        BW=min(next_pow2(max(W, 1)), 1024),
    )  # fmt: skip
    p = _Plan(x, [st, gst, ost])
    launch_dx(p, g, x, dx, weight, mean, invstd, sums, True, False, 1.0, 0.0)
    return dx
