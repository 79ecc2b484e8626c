"""Group norm in two launches each way. Forward: Welford partials per (sample, group,
split), then combine + normalise + affine. Backward: per (sample, channel) sums of dy
and dy*x, then one launch whose programs compute dx (from the group's sums) or
dweight/dbias (summing over the batch). No atomics: deterministic."""

import torch
import triton
import triton.language as tl

from ._common import contiguous, float_acc, tl_float_acc
from ._declare import kernel
from ._launch import cdiv, launch, next_pow2
from ..backends import active_driver
from ._common import stat_dtype


def _plan(R, D):
    host = active_driver() == "host"
    br = min(next_pow2(max(D, 1)), 256 if host else 2048)
    tiles = cdiv(D, br)
    target = 4 if host else 1024
    split = max(1, min(tiles, cdiv(target, max(R, 1)), 64))
    per = cdiv(tiles, split)
    return br, per, cdiv(tiles, per)


@triton.jit
def _gn_stats_kernel(x, part, D, per, ACC: tl.constexpr, BR: tl.constexpr):
    r = tl.program_id(0)
    sp = tl.program_id(1)
    nsplit = tl.num_programs(1)
    R = tl.num_programs(0)
    base = r.to(tl.int64) * D
    cnt = tl.zeros((), ACC)
    mean = tl.zeros((), ACC)
    m2 = tl.zeros((), ACC)
    for t in range(sp * per, (sp + 1) * per):
        d = t * BR + tl.arange(0, BR)
        m = d < D
        v = tl.load(x + base + d, mask=m, other=0).to(ACC)
        k = tl.maximum(tl.minimum(D - t * BR, BR), 0).to(ACC)
        bmean = tl.sum(v, 0) / tl.maximum(k, 1)
        dv = tl.where(m, v - bmean, 0)
        tot = cnt + k
        delta = bmean - mean
        frac = tl.where(tot > 0, k / tl.maximum(tot, 1), 0)
        mean += delta * frac
        m2 += tl.sum(dv * dv, 0) + delta * delta * cnt * frac
        cnt = tot
    o = sp * R + r
    tl.store(part + o, cnt)
    tl.store(part + nsplit * R + o, mean)
    tl.store(part + 2 * nsplit * R + o, m2)


@triton.jit
def _gn_apply_kernel(
    x, y, w, b, part, mean_out, rstd_out, D, HW, G, CPG, per, eps,
    HAS_W: tl.constexpr, HAS_B: tl.constexpr, ACC: tl.constexpr,
    SPLIT_P: tl.constexpr, BR: tl.constexpr,
):  # fmt: skip
    r = tl.program_id(0)
    sp = tl.program_id(1)
    nsplit = tl.num_programs(1)
    R = tl.num_programs(0)
    j = tl.arange(0, SPLIT_P)
    jm = j < nsplit
    pc = tl.load(part + j * R + r, mask=jm, other=0)
    pmean = tl.load(part + (nsplit + j) * R + r, mask=jm, other=0)
    pm2 = tl.load(part + (2 * nsplit + j) * R + r, mask=jm, other=0)
    tot = tl.sum(pc, 0)
    mean = tl.sum(pc * pmean, 0) / tot
    dm = tl.where(jm, pmean - mean, 0)
    rstd = 1.0 / tl.sqrt(tl.sum(pm2 + pc * dm * dm, 0) / tot + eps)
    if sp == 0:
        tl.store(mean_out + r, mean.to(mean_out.dtype.element_ty))
        tl.store(rstd_out + r, rstd.to(rstd_out.dtype.element_ty))
    base = r.to(tl.int64) * D
    cbase = (r % G) * CPG
    for t in range(sp * per, (sp + 1) * per):
        d = t * BR + tl.arange(0, BR)
        m = d < D
        v = tl.load(x + base + d, mask=m, other=0).to(ACC)
        out = (v - mean) * rstd
        ch = cbase + d // HW
        if HAS_W:
            out = out * tl.load(w + ch, mask=m, other=0).to(ACC)
        if HAS_B:
            out = out + tl.load(b + ch, mask=m, other=0).to(ACC)
        tl.store(y + base + d, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def _gn_bwd_sums_kernel(dy, x, sums, NC, HW, ACC: tl.constexpr, BR: tl.constexpr):
    # sums[0|1, n*C + c]: sums over HxW of dy and of dy * x.
    r = tl.program_id(0)
    base = r.to(tl.int64) * HW
    a1 = tl.zeros((BR,), ACC)
    a2 = tl.zeros((BR,), ACC)
    for h0 in range(0, HW, BR):
        h = h0 + tl.arange(0, BR)
        m = h < HW
        g = tl.load(dy + base + h, mask=m, other=0).to(ACC)
        a1 += g
        a2 += g * tl.load(x + base + h, mask=m, other=0).to(ACC)
    tl.store(sums + r, tl.sum(a1, 0))
    tl.store(sums + NC + r, tl.sum(a2, 0))


@triton.jit
def _gn_bwd_kernel(
    dy, x, dx, w, mean, rstd, sums, dw, db, N, C, D, HW, G, CPG, per, nsplit, ndx,
    DX: tl.constexpr, DW: tl.constexpr, DB: tl.constexpr, HAS_W: tl.constexpr,
    ACC: tl.constexpr, CPG_P: tl.constexpr, BC: tl.constexpr, BR: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    NC = N * C
    if pid < ndx:  # dx of row (n, g), split sp
        r = pid // nsplit
        sp = pid - r * nsplit
        n = r // G
        g = r - n * G
        mu = tl.load(mean + r).to(ACC)
        rs = tl.load(rstd + r).to(ACC)
        k = tl.arange(0, CPG_P)
        km = k < CPG
        ch = g * CPG + k
        sdy = tl.load(sums + n * C + ch, mask=km, other=0)
        sdyx = tl.load(sums + NC + n * C + ch, mask=km, other=0)
        if HAS_W:
            wk = tl.load(w + ch, mask=km, other=0).to(ACC)
        else:
            wk = tl.where(km, 1.0, 0.0).to(ACC)
        A = tl.sum(wk * sdy, 0) / D
        B = tl.sum(wk * (sdyx - mu * sdy), 0) * rs / D
        base = r.to(tl.int64) * D
        for t in range(sp * per, (sp + 1) * per):
            d = t * BR + tl.arange(0, BR)
            m = d < D
            gv = tl.load(dy + base + d, mask=m, other=0).to(ACC)
            if HAS_W:
                gv = gv * tl.load(w + g * CPG + d // HW, mask=m, other=0).to(ACC)
            v = tl.load(x + base + d, mask=m, other=0).to(ACC)
            out = rs * (gv - A - (v - mu) * rs * B)
            tl.store(dx + base + d, out.to(dx.dtype.element_ty), mask=m)
    else:  # dweight/dbias of a block of channels, summed over the batch
        c = (pid - ndx) * BC + tl.arange(0, BC)
        cm = c < C
        gidx = c // CPG
        aw = tl.zeros((BC,), ACC)
        ab = tl.zeros((BC,), ACC)
        for n in range(0, N):
            sdy = tl.load(sums + n * C + c, mask=cm, other=0)
            sdyx = tl.load(sums + NC + n * C + c, mask=cm, other=0)
            mu = tl.load(mean + n * G + gidx, mask=cm, other=0).to(ACC)
            rs = tl.load(rstd + n * G + gidx, mask=cm, other=0).to(ACC)
            aw += (sdyx - mu * sdy) * rs
            ab += sdy
        if DW:
            tl.store(dw + c, aw.to(dw.dtype.element_ty), mask=cm)
        if DB:
            tl.store(db + c, ab.to(db.dtype.element_ty), mask=cm)


@kernel()
def native_group_norm(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    N: int,
    C: int,
    HxW: int,
    group: int,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = contiguous(input)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    mean = torch.empty((N, group), dtype=stat_dtype(x.dtype), device=x.device)
    rstd = torch.empty((N, group), dtype=stat_dtype(x.dtype), device=x.device)
    R, cpg = N * group, C // group
    D = cpg * HxW
    if R == 0:
        return y, mean, rstd
    br, per, split = _plan(R, D)
    acc = tl_float_acc(x.dtype)
    part = torch.empty((3, split, R), dtype=float_acc(x.dtype), device=x.device)
    launch(_gn_stats_kernel, (R, split), x, part, D, per, ACC=acc, BR=br)
    launch(
        _gn_apply_kernel, (R, split), x, y,
        weight if weight is not None else x, bias if bias is not None else x,
        part, mean, rstd, D, HxW, group, cpg, per, float(eps),
        HAS_W=weight is not None, HAS_B=bias is not None, ACC=acc,
        SPLIT_P=next_pow2(split), BR=br,
    )  # fmt: skip
    return y, mean, rstd


@kernel()
def native_group_norm_backward(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    mean: torch.Tensor,
    rstd: torch.Tensor,
    weight: torch.Tensor | None,
    N: int,
    C: int,
    HxW: int,
    group: int,
    output_mask: list[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    x = contiguous(input)
    g = contiguous(grad_out)
    cpg = C // group
    D = cpg * HxW
    R = N * group
    pdt = weight.dtype if weight is not None else x.dtype
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device) if output_mask[0] else None
    dw = torch.empty((C,), dtype=pdt, device=x.device) if output_mask[1] else None
    db = torch.empty((C,), dtype=pdt, device=x.device) if output_mask[2] else None
    if not any(output_mask[:3]) or C == 0:
        return dx, dw, db
    if N * HxW == 0:
        for t in (dw, db):
            if t is not None:
                t.zero_()
        return dx, dw, db
    acc = tl_float_acc(x.dtype)
    host = active_driver() == "host"
    sums = torch.empty((2, N * C), dtype=float_acc(x.dtype), device=x.device)
    bs = min(next_pow2(HxW), 256 if host else 1024)
    launch(_gn_bwd_sums_kernel, (N * C,), g, x, sums, N * C, HxW, ACC=acc, BR=bs)
    br, per, split = _plan(R, D)
    ndx = R * split if output_mask[0] else 0
    bc = min(next_pow2(C), 128)
    ndw = cdiv(C, bc) if (output_mask[1] or output_mask[2]) else 0
    launch(
        _gn_bwd_kernel, (ndx + ndw,), g, x, dx if dx is not None else x,
        weight if weight is not None else x, mean, rstd, sums,
        dw if dw is not None else x, db if db is not None else x,
        N, C, D, HxW, group, cpg, per, split, ndx,
        DX=bool(output_mask[0]), DW=bool(output_mask[1]), DB=bool(output_mask[2]),
        HAS_W=weight is not None, ACC=acc, CPG_P=next_pow2(cpg), BC=bc, BR=br,
    )  # fmt: skip
    return dx, dw, db
