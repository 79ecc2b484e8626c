"""Batch norm: training forward in two launches (per-channel partial Welford
statistics, then combine + running-stat update + normalise/affine), eval in one
pointwise launch, backward in two (per-channel partial sums of dy and dy*(x-mean),
then dx and dweight/dbias). The activation is read in place through its
(N, C, spatial) strides, so NCHW and channels_last both run without a copy; the
two-stage reductions use no atomics (deterministic). Statistics are float32 for
fp16/bf16 inputs; weights and running stats may have another dtype (autocast)."""

import math

import torch
import triton
import triton.language as tl

from ._common import contiguous, stat_dtype, tl_float_acc
from ._declare import kernel
from ._launch import cdiv, launch, next_pow2
from ..backends import active_driver


def _ncs(t):
    """(sN, sC, sS) when the spatial dims of `t` merge into one strided dim, else None."""
    dims = [(n, s) for n, s in zip(t.shape[2:], t.stride()[2:]) if n != 1]
    for (_, sa), (nb, sb) in zip(dims, dims[1:]):
        if sa != sb * nb:
            return None
    sS = dims[-1][1] if dims else 1
    return t.stride(0), t.stride(1), sS


def _view(t):
    st = _ncs(t)
    if st is None:
        t = contiguous(t)
        st = _ncs(t)
    return t, st


class _Plan:
    """Tile and split of the (C, N*S) reduction; a function of sizes and strides only."""

    def __init__(self, x, st):
        N, C = x.shape[0], x.shape[1]
        S = math.prod(x.shape[2:])
        host = active_driver() == "host"
        # The interpreter's cost is per program and per loop step: big tiles on the host.
        tile = 1 << 14 if host else 4096
        _, sC, sS = st
        if sC == 1 and C > 1 and (S == 1 or sS != 1):  # channels_last: C is fastest
            bc = min(next_pow2(C), 1024 if host and S == 1 else 64)
            br = max(1, min(next_pow2(S), tile // bc))
        else:
            br = min(next_pow2(S), tile)
            bc = max(1, min(next_pow2(C), tile // br))
        self.N, self.C, self.S, self.BC, self.BR = N, C, S, bc, br
        self.T = cdiv(S, br)
        self.items = N * self.T
        cblocks = cdiv(C, bc)
        target = 4 if host else 1024
        # Every program of a channel block re-reads the block's partials: keep that
        # (split^2 * C * 12 bytes) a small fraction of the activation's bytes.
        cap = max(1, int(math.sqrt(max(1, x.numel() * x.element_size()) / (48 * max(C, 1)))))
        cap = 1024 if host else cap  # the host tests exercise the merge
        split = max(1, min(self.items, max(1, target // cblocks), cap, 1024))
        self.per = max(1, cdiv(self.items, split))
        self.split = max(1, cdiv(self.items, self.per))
        # The merge reads SPLIT_P partials at a time (2 on the host: chunks tested).
        self.split_p = min(next_pow2(self.split), 2 if host else max(1, 4096 // bc))
        self.cblocks = cblocks
        self.warps = 4 if host or bc * br < 2048 else 8


@triton.jit
def _tile(ptr, c, cm, it, T, S, sN, sC, sS, BR: tl.constexpr):
    n = it // T
    s0 = (it - n * T) * BR
    s = s0 + tl.arange(0, BR)
    m = cm[:, None] & (s < S)[None, :]
    offs = c[:, None].to(tl.int64) * sC + n.to(tl.int64) * sN + s[None, :].to(tl.int64) * sS
    return offs, m, s0


@triton.jit
def _bn_stats_kernel(
    x, part, C, S, T, items, per, sN, sC, sS, ACC: tl.constexpr, BC: tl.constexpr, BR: tl.constexpr
):
    # part[0|1|2, split, c]: count, mean, M2 of this split's share (Welford/Chan merge).
    cb = tl.program_id(0)
    sp = tl.program_id(1)
    nsplit = tl.num_programs(1)
    c = cb * BC + tl.arange(0, BC)
    cm = c < C
    start = sp * per
    end = tl.minimum(start + per, items)
    cnt = tl.zeros((BC,), ACC)
    mean = tl.zeros((BC,), ACC)
    m2 = tl.zeros((BC,), ACC)
    for it in range(start, end):
        offs, m, s0 = _tile(x, c, cm, it, T, S, sN, sC, sS, BR)
        v = tl.load(x + offs, mask=m, other=0).to(ACC)
        k = tl.minimum(S - s0, BR).to(ACC)
        bmean = tl.sum(v, 1) / k
        d = tl.where(m, v - bmean[:, None], 0)
        bm2 = tl.sum(d * d, 1)
        tot = cnt + k
        delta = bmean - mean
        mean += delta * (k / tot)
        m2 += bm2 + delta * delta * (cnt * k / tot)
        cnt = tot
    o = sp * C + c
    tl.store(part + o, cnt, mask=cm)
    tl.store(part + nsplit * C + o, mean, mask=cm)
    tl.store(part + 2 * nsplit * C + o, m2, mask=cm)


@triton.jit
def _bn_apply_kernel(
    x, y, w, b, part, rmean, rvar, smean, sinv,
    C, S, T, items, per, nsplit, sN, sC, sS, yN, yC, yS, momentum, eps,
    TRAIN: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, HAS_RUN: tl.constexpr,
    ACC: tl.constexpr, SPLIT_P: tl.constexpr, BC: tl.constexpr, BR: tl.constexpr,
):  # fmt: skip
    cb = tl.program_id(0)
    sp = tl.program_id(1)
    c = cb * BC + tl.arange(0, BC)
    cm = c < C
    if TRAIN:  # merge the partials (Chan et al.), SPLIT_P of them at a time
        # The loops add whole (BC, SPLIT_P) tiles and reduce once after them: a reduction
        # inside them trips an assertion of Triton 3.6 (OptimizeThreadLocality) at
        # BC=64 and SPLIT_P >= 32 (channels_last ResNet shapes).
        tot2 = tl.zeros((BC, SPLIT_P), ACC)
        s12 = tl.zeros((BC, SPLIT_P), ACC)
        for j0 in range(0, nsplit, SPLIT_P):
            j = j0 + tl.arange(0, SPLIT_P)
            pm = cm[:, None] & (j < nsplit)[None, :]
            po = j[None, :] * C + c[:, None]
            pc = tl.load(part + po, mask=pm, other=0)
            tot2 += pc
            s12 += pc * tl.load(part + nsplit * C + po, mask=pm, other=0)
        tot = tl.sum(tot2, 1)
        mean = tl.sum(s12, 1) / tot
        m22 = tl.zeros((BC, SPLIT_P), ACC)
        for j0 in range(0, nsplit, SPLIT_P):
            j = j0 + tl.arange(0, SPLIT_P)
            pm = cm[:, None] & (j < nsplit)[None, :]
            po = j[None, :] * C + c[:, None]
            pc = tl.load(part + po, mask=pm, other=0)
            dm = tl.where(pm, tl.load(part + nsplit * C + po, mask=pm, other=0) - mean[:, None], 0)
            m22 += tl.load(part + 2 * nsplit * C + po, mask=pm, other=0) + pc * dm * dm
        var = tl.sum(m22, 1) / tot
        invstd = 1.0 / tl.sqrt(var + eps)
        if sp == 0:
            tl.store(smean + c, mean.to(smean.dtype.element_ty), mask=cm)
            tl.store(sinv + c, invstd.to(sinv.dtype.element_ty), mask=cm)
            if HAS_RUN:
                rm = tl.load(rmean + c, mask=cm, other=0).to(ACC)
                rv = tl.load(rvar + c, mask=cm, other=0).to(ACC)
                unbiased = var * tot / tl.maximum(tot - 1, 1)
                rm = rm * (1 - momentum) + mean * momentum
                rv = rv * (1 - momentum) + unbiased * momentum
                tl.store(rmean + c, rm.to(rmean.dtype.element_ty), mask=cm)
                tl.store(rvar + c, rv.to(rvar.dtype.element_ty), mask=cm)
    else:
        mean = tl.load(rmean + c, mask=cm, other=0).to(ACC)
        invstd = 1.0 / tl.sqrt(tl.load(rvar + c, mask=cm, other=1).to(ACC) + eps)
    scale = invstd
    if HAS_W:
        scale = scale * tl.load(w + c, mask=cm, other=0).to(ACC)
    shift = -mean * scale
    if HAS_B:
        shift += tl.load(b + c, mask=cm, other=0).to(ACC)
    start = sp * per
    end = tl.minimum(start + per, items)
    for it in range(start, end):
        offs, m, s0 = _tile(x, c, cm, it, T, S, sN, sC, sS, BR)
        yoffs, _, _ = _tile(y, c, cm, it, T, S, yN, yC, yS, BR)
        v = tl.load(x + offs, mask=m, other=0).to(ACC)
        out = v * scale[:, None] + shift[:, None]
        tl.store(y + yoffs, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def _bn_bwd_sums_kernel(
    dy, x, mean, part, C, S, T, items, per, sN, sC, sS, gN, gC, gS,
    ACC: tl.constexpr, BC: tl.constexpr, BR: tl.constexpr,
):  # fmt: skip
    # part[0|1, split, c]: sums of dy and of dy * (x - mean) over this split's share.
    cb = tl.program_id(0)
    sp = tl.program_id(1)
    nsplit = tl.num_programs(1)
    c = cb * BC + tl.arange(0, BC)
    cm = c < C
    mu = tl.load(mean + c, mask=cm, other=0).to(ACC)
    start = sp * per
    end = tl.minimum(start + per, items)
    a1 = tl.zeros((BC, BR), ACC)
    a2 = tl.zeros((BC, BR), ACC)
    for it in range(start, end):
        offs, m, s0 = _tile(x, c, cm, it, T, S, sN, sC, sS, BR)
        goffs, _, _ = _tile(dy, c, cm, it, T, S, gN, gC, gS, BR)
        g = tl.load(dy + goffs, mask=m, other=0).to(ACC)
        v = tl.load(x + offs, mask=m, other=0).to(ACC)
        a1 += g
        a2 += g * tl.where(m, v - mu[:, None], 0)
    o = sp * C + c
    tl.store(part + o, tl.sum(a1, 1), mask=cm)
    tl.store(part + nsplit * C + o, tl.sum(a2, 1), mask=cm)


@triton.jit
def _bn_bwd_dx_kernel(
    dy, x, dx, w, mean, stat, part, dw, db,
    C, S, T, items, per, nsplit, sN, sC, sS, gN, gC, gS, oN, oC, oS, count, eps,
    TRAIN: tl.constexpr, IS_VAR: tl.constexpr, HAS_W: tl.constexpr, SUMS: tl.constexpr,
    DX: tl.constexpr, DW: tl.constexpr, DB: tl.constexpr,
    ACC: tl.constexpr, SPLIT_P: tl.constexpr, BC: tl.constexpr, BR: tl.constexpr,
):  # fmt: skip
    cb = tl.program_id(0)
    sp = tl.program_id(1)
    c = cb * BC + tl.arange(0, BC)
    cm = c < C
    mu = tl.load(mean + c, mask=cm, other=0).to(ACC)
    sv = tl.load(stat + c, mask=cm, other=1).to(ACC)
    if IS_VAR:  # eval: `stat` is the running variance
        invstd = 1.0 / tl.sqrt(sv + eps)
    else:
        invstd = sv
    sdy = tl.zeros((BC,), ACC)
    dot = tl.zeros((BC,), ACC)
    if SUMS:  # tiles added in the loop, reduced after it (see _bn_apply_kernel)
        sdy2 = tl.zeros((BC, SPLIT_P), ACC)
        dot2 = tl.zeros((BC, SPLIT_P), ACC)
        for j0 in range(0, nsplit, SPLIT_P):
            j = j0 + tl.arange(0, SPLIT_P)
            pm = cm[:, None] & (j < nsplit)[None, :]
            po = j[None, :] * C + c[:, None]
            sdy2 += tl.load(part + po, mask=pm, other=0)
            dot2 += tl.load(part + nsplit * C + po, mask=pm, other=0)
        sdy = tl.sum(sdy2, 1)
        dot = tl.sum(dot2, 1) * invstd
        if sp == 0:
            if DW:
                tl.store(dw + c, dot.to(dw.dtype.element_ty), mask=cm)
            if DB:
                tl.store(db + c, sdy.to(db.dtype.element_ty), mask=cm)
    if DX:
        a = invstd
        if HAS_W:
            a = a * tl.load(w + c, mask=cm, other=0).to(ACC)
        if TRAIN:
            k = a * invstd * dot / count
            cx = -k
            c0 = k * mu - a * sdy / count
        else:
            cx = tl.zeros((BC,), ACC)
            c0 = tl.zeros((BC,), ACC)
        start = sp * per
        end = tl.minimum(start + per, items)
        for it in range(start, end):
            offs, m, s0 = _tile(x, c, cm, it, T, S, sN, sC, sS, BR)
            goffs, _, _ = _tile(dy, c, cm, it, T, S, gN, gC, gS, BR)
            ooffs, _, _ = _tile(dx, c, cm, it, T, S, oN, oC, oS, BR)
            g = tl.load(dy + goffs, mask=m, other=0).to(ACC)
            if TRAIN:
                v = tl.load(x + offs, mask=m, other=0).to(ACC)
                d = g * a[:, None] + v * cx[:, None] + c0[:, None]
            else:
                d = g * a[:, None]
            tl.store(dx + ooffs, d.to(dx.dtype.element_ty), mask=m)


def _check(input):
    if input.dim() < 2:
        raise RuntimeError(
            f"torch_ext: batch_norm expects an input of at least 2 dims, got {input.dim()}"
        )


def _empty_like(x):
    y = torch.empty_like(x)
    st = _ncs(y)
    if st is None:  # not dense: a contiguous output
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        st = _ncs(y)
    return y, st


def bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(out, save_mean, save_invstd); running stats updated in place when training."""
    _check(input)
    x, st = _view(input)
    p = _Plan(x, st)
    sd = stat_dtype(x.dtype)
    y, yst = _empty_like(x)
    C = p.C
    acc = tl_float_acc(x.dtype)
    if training:
        smean = torch.empty((C,), dtype=sd, device=x.device)
        sinv = torch.empty((C,), dtype=sd, device=x.device)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "torch_ext: batch_norm in eval mode needs running_mean and running_var"
            )
        smean = torch.empty((0,), dtype=sd, device=x.device)
        sinv = torch.empty((0,), dtype=sd, device=x.device)
    if C == 0 or x.numel() == 0:
        return y, smean, sinv
    grid = (p.cblocks, p.split)
    part = x
    if training:
        part = torch.empty((3, p.split, C), dtype=float_acc_t(x.dtype), device=x.device)
        launch(_bn_stats_kernel, grid, x, part, C, p.S, p.T, p.items, p.per, *st,
               ACC=acc, BC=p.BC, BR=p.BR, num_warps=p.warps)  # fmt: skip
    has_run = running_mean is not None and running_var is not None
    launch(
        _bn_apply_kernel, grid, x, y,
        weight if weight is not None else x, bias if bias is not None else x, part,
        running_mean if has_run else x, running_var if has_run else x,
        smean if training else x, sinv if training else x,
        C, p.S, p.T, p.items, p.per, p.split, *st, *yst, float(momentum), float(eps),
        TRAIN=bool(training), HAS_W=weight is not None, HAS_B=bias is not None,
        HAS_RUN=has_run, ACC=acc, SPLIT_P=p.split_p, BC=p.BC, BR=p.BR, num_warps=p.warps,
    )  # fmt: skip
    return y, smean, sinv


def float_acc_t(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def bn_backward(grad_out, input, weight, mean, stat, train, eps, mask, is_var):
    """(dx, dweight, dbias) from `mean` and `stat` (invstd, or the running var when
    `is_var`); None where `mask` is False."""
    _check(input)
    x, st = _view(input)
    g, gst = _view(grad_out)
    p = _Plan(x, st)
    C = p.C
    pdt = weight.dtype if weight is not None else x.dtype
    dx = dw = db = None
    if mask[0]:
        dx, ost = _empty_like(x)
    else:
        ost = st
    if mask[1]:
        dw = torch.empty((C,), dtype=pdt, device=x.device)
    if mask[2]:
        db = torch.empty((C,), dtype=pdt, device=x.device)
    sums = bool(mask[1] or mask[2] or (mask[0] and train))
    if C == 0 or not (mask[0] or mask[1] or mask[2]):
        return dx, dw, db
    if x.numel() == 0:
        for t in (dw, db):
            if t is not None:
                t.zero_()
        return dx, dw, db
    acc = tl_float_acc(x.dtype)
    part = x
    if sums:
        part = torch.empty((2, p.split, C), dtype=float_acc_t(x.dtype), device=x.device)
        launch(_bn_bwd_sums_kernel, (p.cblocks, p.split), g, x, mean, part, C, p.S, p.T,
               p.items, p.per, *st, *gst, ACC=acc, BC=p.BC, BR=p.BR,
               num_warps=p.warps)  # fmt: skip
    launch(
        _bn_bwd_dx_kernel, (p.cblocks, p.split if mask[0] else 1), g, x,
        dx if dx is not None else x, weight if weight is not None else x, mean, stat, part,
        dw if dw is not None else x, db if db is not None else x,
        C, p.S, p.T, p.items, p.per, p.split, *st, *gst, *ost, float(p.N * p.S), float(eps),
        TRAIN=bool(train), IS_VAR=bool(is_var), HAS_W=weight is not None, SUMS=sums,
        DX=bool(mask[0]), DW=bool(mask[1]), DB=bool(mask[2]),
        ACC=acc, SPLIT_P=p.split_p, BC=p.BC, BR=p.BR, num_warps=p.warps,
    )  # fmt: skip
    return dx, dw, db


def _backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
              train, eps, mask):  # fmt: skip
    if train:
        return bn_backward(grad_out, input, weight, save_mean, save_invstd, True, eps, mask, False)
    if running_mean is None or running_var is None:
        raise RuntimeError("torch_ext: batch_norm backward in eval mode needs running stats")
    return bn_backward(grad_out, input, weight, running_mean, running_var, False, eps, mask, True)


def _copy_out(outs, results):
    from .copy import copy_kernel

    for o, r in zip(outs, results):
        o.resize_(r.shape)
        if r.numel():
            copy_kernel((o,), (r,))
    return outs


# -- the aten entry points ------------------------------------------------------


@kernel()
def native_batch_norm(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps)


@kernel()
def native_batch_norm_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r = native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    return _copy_out((out, save_mean, save_invstd), r)


@kernel()
def native_batch_norm_backward(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    save_mean: torch.Tensor | None,
    save_invstd: torch.Tensor | None,
    train: bool,
    eps: float,
    output_mask: list[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    return _backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
                     train, eps, output_mask)  # fmt: skip


def _reserve(x):
    return torch.empty((0,), dtype=torch.uint8, device=x.device)


@kernel()
def batch_norm_with_update(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    y, m, s = bn_forward(input, weight, bias, running_mean, running_var, True, momentum, eps)
    return y, m, s, _reserve(input)


@kernel()
def batch_norm_with_update_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    momentum: float,
    eps: float,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
    reserve: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r = bn_forward(input, weight, bias, running_mean, running_var, True, momentum, eps)
    reserve.resize_((0,))
    _copy_out((out, save_mean, save_invstd), r)
    return out, save_mean, save_invstd, reserve


@kernel()
def batch_norm_no_update(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    training = running_mean is None or running_var is None
    y, m, s = bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps)
    return y, m, s, _reserve(input)


@kernel()
def native_batch_norm_legit(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps)


@kernel()
def native_batch_norm_legit_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r = bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps)
    return _copy_out((out, save_mean, save_invstd), r)


@kernel()
def native_batch_norm_legit_no_stats(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return bn_forward(input, weight, bias, None, None, True, momentum, eps)


@kernel()
def native_batch_norm_legit_no_stats_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r = bn_forward(input, weight, bias, None, None, True, momentum, eps)
    return _copy_out((out, save_mean, save_invstd), r)


@kernel()
def batch_norm_backward(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    save_mean: torch.Tensor | None,
    save_var: torch.Tensor | None,
    update: bool,
    eps: float,
    output_mask: list[bool],
    reserve: torch.Tensor,
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    # torch's save_var is the saved invstd (as native_batch_norm_backward's save_invstd);
    # `update` says whether batch statistics were used (training).
    return _backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var,
                     update, eps, output_mask)  # fmt: skip
