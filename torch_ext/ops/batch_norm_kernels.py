"""Batch norm's Triton kernels (batch_norm.py plans and launches them).

The activation is seen as (N, C, S) through its strides. A tile is BC channels x
BN samples x BS spatial positions (lane j of the last two: sample j // BS, position
j % BS). An "item" is one such block of (n, s) for a channel block; items run
s-block-major (item = s_block * TN + n_block) and the plan makes BN == 1 or a single
s-block, so a lane is valid for a prefix of the items and invalid after it: its
Welford count is then the loop step's, a scalar, and its final count follows from
its position alone (no per-lane counter).

A reduction over (N, S) is split over `nsplit` programs per channel block. Each
writes its partial; with more than one, the last program to arrive (a ticket on a
per-channel-block counter) merges them in split order and finishes: the reduction is
deterministic, and the normalise / dx launch reads a finished per-channel vector.
"""

import triton
import triton.language as tl

from ._common import arrive, as_multiple


@triton.jit
def _lanes(cb, C, BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr):
    c = cb * BC + tl.arange(0, BC)
    j = tl.arange(0, BN * BS)
    return c, c < C, j // BS, j % BS


@triton.jit
def _nc(sN, sC, AL: tl.constexpr):
    """A tensor's sample and channel strides told as multiples of AL (_Plan.align)."""
    return as_multiple(sN, AL), as_multiple(sC, AL)


@triton.jit
def _offsets(c, jn, js, sN, sC, sS, I64: tl.constexpr):
    """Each lane's offset from its item's base (loop-invariant)."""
    if I64:
        c = c.to(tl.int64)
        jn = jn.to(tl.int64)
        js = js.to(tl.int64)
    return c[:, None] * sC + (jn * sN + js * sS)[None, :]


@triton.jit
def _item(it, TN, N, S, jn, js, BN: tl.constexpr, BS: tl.constexpr):
    """(first sample, first position, mask of the (n, s) lanes) of item `it`."""
    sb = it // TN
    n0 = (it - sb * TN) * BN
    s0 = sb * BS
    return n0, s0, (n0 + jn < N) & (s0 + js < S)


@triton.jit
def _base(n0, s0, sN, sS, I64: tl.constexpr):
    if I64:
        n0 = n0.to(tl.int64)
        s0 = s0.to(tl.int64)
    return n0 * sN + s0 * sS


@triton.jit
def _lane_counts(jn, js, N, S, TN, TS, items, start, end, BN: tl.constexpr, BS: tl.constexpr):
    """How many of the items [start, end) each (n, s) lane was valid in: lanes valid
    in the last s-block (or, one s-block, the last n-block) are valid in every item,
    the others in the items before it (see the module's docstring)."""
    ok_s = js < S - (TS - 1) * BS
    ok_n = jn < N - (TN - 1) * BN
    last = tl.where(ok_s, tl.where(ok_n, items, items - 1), (TS - 1) * TN)
    return tl.maximum(tl.minimum(end, last) - start, 0)


@triton.jit
def _count(a, b, full, full_nv, tail_nv, ACC: tl.constexpr):
    """Valid (n, s) elements in items [a, b): `full_nv` each before item `full`,
    `tail_nv` each from it on (the last s-block, or the last n-block; see _Plan)."""
    lead = tl.maximum(tl.minimum(b, full) - a, 0).to(ACC)
    tail = tl.maximum(b - tl.maximum(a, full), 0).to(ACC)
    return lead * full_nv + tail * tail_nv


@triton.jit
def _bn_finish(c, cm, n, mean, m2, rmean, rvar, smean, sinv, momentum, eps,
               HAS_RUN: tl.constexpr, ACC: tl.constexpr):  # fmt: skip
    var = m2 / n
    tl.store(smean + c, mean.to(smean.dtype.element_ty), mask=cm)
    tl.store(sinv + c, (1.0 / tl.sqrt(var + eps)).to(sinv.dtype.element_ty), mask=cm)
    if HAS_RUN:
        rm = tl.load(rmean + c, mask=cm, other=0).to(ACC)
        rv = tl.load(rvar + c, mask=cm, other=0).to(ACC)
        unbiased = var * n / tl.maximum(n - 1, 1)
        tl.store(rmean + c, (rm * (1 - momentum) + mean * momentum).to(rmean.dtype.element_ty),
                 mask=cm)  # fmt: skip
        tl.store(rvar + c, (rv * (1 - momentum) + unbiased * momentum).to(rvar.dtype.element_ty),
                 mask=cm)  # fmt: skip


@triton.jit
def _split_program(C, per, items, BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr):
    """(channel block, split, splits, lanes (_lanes), its items [start, end)) of a program
    of a split reduction's (channel blocks, splits) grid."""
    cb = tl.program_id(0)
    sp = tl.program_id(1)
    c, cm, jn, js = _lanes(cb, C, BC, BN, BS)
    start = sp * per
    return cb, sp, tl.num_programs(1), c, cm, jn, js, start, tl.minimum(start + per, items)


@triton.jit
def _store_partials(part, sp, nsplit, C, c, cm, first, second):
    """A split's two per-channel partials into part[0|1, split, c]."""
    o = sp * C + c
    tl.store(part + o, first, mask=cm)
    tl.store(part + nsplit * C + o, second, mask=cm)


@triton.jit
def _welford_items(x, start, end, c, cm, jn, js, offs, TN, N, S, sN, sS, TS, items, full,
                   full_nv, tail_nv, ACC: tl.constexpr, I64: tl.constexpr, BN: tl.constexpr,
                   BS: tl.constexpr, ST: tl.constexpr):  # fmt: skip
    """(count, mean, M2) per channel of items [start, end): per-lane Welford, then the
    lanes combined."""
    BC: tl.constexpr = c.shape[0]
    mean = tl.zeros((BC, BN * BS), ACC)
    m2 = tl.zeros((BC, BN * BS), ACC)
    for it in tl.range(start, end, num_stages=ST):
        n0, s0, rm = _item(it, TN, N, S, jn, js, BN, BS)
        m = cm[:, None] & rm[None, :]
        v = tl.load(x + _base(n0, s0, sN, sS, I64) + offs, mask=m, other=0).to(ACC)
        # A valid lane has been valid in every step before: its count is the step's.
        rk = 1.0 / (it - start + 1).to(ACC)
        d = v - mean
        mean = tl.where(m, mean + d * rk, mean)
        m2 = tl.where(m, m2 + d * (v - mean), m2)
    cnt = _lane_counts(jn, js, N, S, TN, TS, items, start, end, BN, BS).to(ACC)[None, :]
    n = _count(start, end, full, full_nv, tail_nv, ACC)
    pmean = tl.sum(mean * cnt, 1) / n
    dm = mean - pmean[:, None]
    return n, pmean, tl.sum(m2 + cnt * dm * dm, 1)


@triton.jit
def _chan_merge(part, c, cm, C, nsplit, per, items, full, full_nv, tail_nv,
                SPLIT_P: tl.constexpr, ACC: tl.constexpr):  # fmt: skip
    """(count, mean, M2) per channel from the splits' partials part[0|1, split, c] (Chan's
    merge, element-wise over SPLIT_P rows of partials at a time, no reduction inside the
    loop, then over the rows; the same order in every program: deterministic)."""
    BC: tl.constexpr = c.shape[0]
    an = tl.zeros((SPLIT_P, 1), ACC)
    amean = tl.zeros((SPLIT_P, BC), ACC)
    am2 = tl.zeros((SPLIT_P, BC), ACC)
    for j0 in range(0, nsplit, SPLIT_P):
        j = j0 + tl.arange(0, SPLIT_P)
        pm = (j < nsplit)[:, None] & cm[None, :]
        po = j[:, None] * C + c[None, :]
        pn = _count(j * per, tl.minimum(j * per + per, items), full, full_nv, tail_nv,
                    ACC)[:, None]  # fmt: skip
        pmu = tl.load(part + po, mask=pm, other=0, cache_modifier=".cg")
        pv = tl.load(part + nsplit * C + po, mask=pm, other=0, cache_modifier=".cg")
        tot = an + pn
        f = tl.where(tot > 0, pn / tl.maximum(tot, 1), 0)
        delta = pmu - amean
        amean += delta * f
        am2 += pv + delta * delta * an * f
        an = tot
    total = tl.sum(an, 0)
    cmean = tl.sum(an * amean, 0) / total
    dev = amean - cmean[None, :]
    return total, cmean, tl.sum(am2 + an * dev * dev, 0)


@triton.jit
def _bn_stats_kernel(
    x, part, arrivals, rmean, rvar, smean, sinv,
    C, N, S, sN, sC, sS, TN, TS, items, per, full, full_nv, tail_nv, momentum, eps,
    HAS_RUN: tl.constexpr, MERGE: tl.constexpr, ACC: tl.constexpr, I64: tl.constexpr,
    AL: tl.constexpr,
    SPLIT_P: tl.constexpr, BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr, ST: tl.constexpr,
):  # fmt: skip
    """Mean and invstd of each channel (and the running-stat update): per-lane Welford
    over the program's items, combined over the lanes, then over the splits."""
    S = as_multiple(S, AL)
    sN, sC = _nc(sN, sC, AL)
    cb, sp, nsplit, c, cm, jn, js, start, end = _split_program(C, per, items, BC, BN, BS)
    offs = _offsets(c, jn, js, sN, sC, sS, I64)
    n, pmean, pm2 = _welford_items(x, start, end, c, cm, jn, js, offs, TN, N, S, sN, sS, TS,
                                   items, full, full_nv, tail_nv, ACC, I64, BN, BS, ST)  # fmt: skip
    if MERGE:  # part[0|1, split, c]: mean and M2 of each split (counts from _count)
        _store_partials(part, sp, nsplit, C, c, cm, pmean, pm2)
        if arrive(arrivals, cb, nsplit):
            total, cmean, cm2 = _chan_merge(part, c, cm, C, nsplit, per, items, full, full_nv,
                                            tail_nv, SPLIT_P, ACC)  # fmt: skip
            _bn_finish(c, cm, total, cmean, cm2, rmean, rvar, smean, sinv, momentum, eps,
                       HAS_RUN, ACC)  # fmt: skip
    else:
        _bn_finish(c, cm, n, pmean, pm2, rmean, rvar, smean, sinv, momentum, eps, HAS_RUN, ACC)


@triton.jit
def _invstd(stat, c, cm, eps, IS_VAR: tl.constexpr, ACC: tl.constexpr):
    sv = tl.load(stat + c, mask=cm, other=1).to(ACC)
    if IS_VAR:  # eval: `stat` is the running variance
        sv = 1.0 / tl.sqrt(sv + eps)
    return sv


@triton.jit
def _bn_apply_kernel(
    x, y, w, b, mean, stat, C, N, S, sN, sC, sS, yN, yC, yS, TN, items, per, eps,
    IS_VAR: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, Y_AS_X: tl.constexpr,
    ACC: tl.constexpr, I64: tl.constexpr, AL: tl.constexpr,
    BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr, ST: tl.constexpr,
):  # fmt: skip
    S = as_multiple(S, AL)
    sN, sC = _nc(sN, sC, AL)
    yN, yC = _nc(yN, yC, AL)
    cb = tl.program_id(0)
    q = tl.program_id(1)
    c, cm, jn, js = _lanes(cb, C, BC, BN, BS)
    scale = _invstd(stat, c, cm, eps, IS_VAR, ACC)
    if HAS_W:
        scale = scale * tl.load(w + c, mask=cm, other=0).to(ACC)
    shift = -tl.load(mean + c, mask=cm, other=0).to(ACC) * scale
    if HAS_B:
        shift += tl.load(b + c, mask=cm, other=0).to(ACC)
    offs = _offsets(c, jn, js, sN, sC, sS, I64)
    yoffs = offs if Y_AS_X else _offsets(c, jn, js, yN, yC, yS, I64)
    # Last items first: the statistics pass read them last (still in L2).
    _normalise_items(x, y, q * per, tl.minimum(q * per + per, items), items - 1, scale, shift,
                     cm, jn, js, offs, yoffs, TN, N, S, sN, sS, yN, yS, ACC, I64, BN,
                     BS, ST)  # fmt: skip


@triton.jit
def _normalise_items(x, y, lo, hi, flip, scale, shift, cm, jn, js, offs, yoffs, TN, N, S,
                     sN, sS, yN, yS, ACC: tl.constexpr, I64: tl.constexpr, BN: tl.constexpr,
                     BS: tl.constexpr, ST: tl.constexpr):  # fmt: skip
    """y = x * scale + shift (per channel) over items flip - i for i in [lo, hi)."""
    for i in tl.range(lo, hi, num_stages=ST):
        n0, s0, rm = _item(flip - i, TN, N, S, jn, js, BN, BS)
        m = cm[:, None] & rm[None, :]
        v = tl.load(x + _base(n0, s0, sN, sS, I64) + offs, mask=m, other=0).to(ACC)
        out = v * scale[:, None] + shift[:, None]
        ybase = _base(n0, s0, yN, yS, I64)
        tl.store(y + ybase + yoffs, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def _bn_bwd_finish(c, cm, sdy, sdx, sums, dw, db, C, invstd,
                   DW: tl.constexpr, DB: tl.constexpr):  # fmt: skip
    dot = sdx * invstd
    tl.store(sums + c, sdy, mask=cm)
    tl.store(sums + C + c, dot, mask=cm)
    _store_dw_db(dw, db, c, cm, dot, sdy, DW, DB)


@triton.jit
def _store_dw_db(dw, db, c, cm, dot, sdy, DW: tl.constexpr, DB: tl.constexpr):
    """dweight = invstd * sum(dy * (x - mean)) (`dot`), dbias = sum(dy)."""
    if DW:
        tl.store(dw + c, dot.to(dw.dtype.element_ty), mask=cm)
    if DB:
        tl.store(db + c, sdy.to(db.dtype.element_ty), mask=cm)


@triton.jit
def _dx_coefficients(w, c, cm, invstd, mu, sdy, dot, count, HAS_W: tl.constexpr,
                     TRAIN: tl.constexpr, ACC: tl.constexpr):  # fmt: skip
    """(a, cx, c0) per channel of dx = a*dy + cx*x + c0 (training, from the sums over
    `count` elements; eval: a*dy)."""
    a = invstd
    if HAS_W:
        a = a * tl.load(w + c, mask=cm, other=0).to(ACC)
    cx = a * 0
    c0 = a * 0
    if TRAIN:
        k = a * invstd * dot / count
        cx = -k
        c0 = k * mu - a * sdy / count
    return a, cx, c0


@triton.jit
def _grad_sums_items(dy, x, start, end, mu, cm, jn, js, offs, goffs, TN, N, S, sN, sS, gN,
                     gS, ACC: tl.constexpr, I64: tl.constexpr, BN: tl.constexpr,
                     BS: tl.constexpr, ST: tl.constexpr):  # fmt: skip
    """(sum of dy, sum of dy * (x - mu)) per channel over items [start, end)."""
    BC: tl.constexpr = cm.shape[0]
    a1 = tl.zeros((BC, BN * BS), ACC)
    a2 = tl.zeros((BC, BN * BS), ACC)
    for it in tl.range(start, end, num_stages=ST):
        n0, s0, rm = _item(it, TN, N, S, jn, js, BN, BS)
        m = cm[:, None] & rm[None, :]
        g = tl.load(dy + _base(n0, s0, gN, gS, I64) + goffs, mask=m, other=0).to(ACC)
        v = tl.load(x + _base(n0, s0, sN, sS, I64) + offs, mask=m, other=0).to(ACC)
        a1 += g
        a2 += g * (v - mu)  # g is 0 where masked
    return tl.sum(a1, 1), tl.sum(a2, 1)


@triton.jit
def _sums_merge(part, c, cm, C, nsplit, SPLIT_P: tl.constexpr, ACC: tl.constexpr):
    """The splits' partial sums part[0|1, split, c] added in split order."""
    BC: tl.constexpr = c.shape[0]
    t1 = tl.zeros((SPLIT_P, BC), ACC)
    t2 = tl.zeros((SPLIT_P, BC), ACC)
    for j0 in range(0, nsplit, SPLIT_P):
        j = j0 + tl.arange(0, SPLIT_P)
        pm = (j < nsplit)[:, None] & cm[None, :]
        po = j[:, None] * C + c[None, :]
        t1 += tl.load(part + po, mask=pm, other=0, cache_modifier=".cg")
        t2 += tl.load(part + nsplit * C + po, mask=pm, other=0, cache_modifier=".cg")
    return tl.sum(t1, 0), tl.sum(t2, 0)


@triton.jit
def _bn_bwd_sums_kernel(
    dy, x, mean, stat, part, arrivals, sums, dw, db,
    C, N, S, sN, sC, sS, gN, gC, gS, TN, items, per, eps,
    IS_VAR: tl.constexpr, DW: tl.constexpr, DB: tl.constexpr, G_AS_X: tl.constexpr,
    MERGE: tl.constexpr, ACC: tl.constexpr, I64: tl.constexpr, AL: tl.constexpr,
    SPLIT_P: tl.constexpr, BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr, ST: tl.constexpr,
):  # fmt: skip
    """sums[0|1, c]: sum of dy and invstd * sum of dy * (x - mean) (and dweight, dbias)."""
    S = as_multiple(S, AL)
    sN, sC = _nc(sN, sC, AL)
    gN, gC = _nc(gN, gC, AL)
    cb, sp, nsplit, c, cm, jn, js, start, end = _split_program(C, per, items, BC, BN, BS)
    mu = tl.load(mean + c, mask=cm, other=0).to(ACC)[:, None]
    offs = _offsets(c, jn, js, sN, sC, sS, I64)
    goffs = offs if G_AS_X else _offsets(c, jn, js, gN, gC, gS, I64)
    sdy, sdx = _grad_sums_items(dy, x, start, end, mu, cm, jn, js, offs, goffs, TN, N, S, sN,
                                sS, gN, gS, ACC, I64, BN, BS, ST)  # fmt: skip
    invstd = _invstd(stat, c, cm, eps, IS_VAR, ACC)
    if MERGE:  # part[0|1, split, c]
        _store_partials(part, sp, nsplit, C, c, cm, sdy, sdx)
        if arrive(arrivals, cb, nsplit):
            t1, t2 = _sums_merge(part, c, cm, C, nsplit, SPLIT_P, ACC)
            _bn_bwd_finish(c, cm, t1, t2, sums, dw, db, C, invstd, DW, DB)
    else:
        _bn_bwd_finish(c, cm, sdy, sdx, sums, dw, db, C, invstd, DW, DB)


@triton.jit
def _bn_bwd_dx_kernel(
    dy, x, dx, w, mean, stat, sums,
    C, N, S, sN, sC, sS, gN, gC, gS, oN, oC, oS, TN, items, per, count, eps,
    TRAIN: tl.constexpr, IS_VAR: tl.constexpr, HAS_W: tl.constexpr,
    G_AS_X: tl.constexpr, O_AS_X: tl.constexpr,
    ACC: tl.constexpr, I64: tl.constexpr, AL: tl.constexpr,
    BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr, ST: tl.constexpr,
):  # fmt: skip
    """dx = a*dy + cx*x + c0 per channel (training), a*dy (eval)."""
    S = as_multiple(S, AL)
    sN, sC = _nc(sN, sC, AL)
    gN, gC = _nc(gN, gC, AL)
    oN, oC = _nc(oN, oC, AL)
    cb = tl.program_id(0)
    q = tl.program_id(1)
    c, cm, jn, js = _lanes(cb, C, BC, BN, BS)
    invstd = _invstd(stat, c, cm, eps, IS_VAR, ACC)
    mu = invstd * 0
    sdy = mu
    dot = mu
    if TRAIN:
        mu = tl.load(mean + c, mask=cm, other=0).to(ACC)
        sdy = tl.load(sums + c, mask=cm, other=0)
        dot = tl.load(sums + C + c, mask=cm, other=0)
    a, cx, c0 = _dx_coefficients(w, c, cm, invstd, mu, sdy, dot, count, HAS_W, TRAIN, ACC)
    offs = _offsets(c, jn, js, sN, sC, sS, I64)
    goffs = offs if G_AS_X else _offsets(c, jn, js, gN, gC, gS, I64)
    ooffs = offs if O_AS_X else _offsets(c, jn, js, oN, oC, oS, I64)
    # Last items first: the sums pass read them last (still in L2).
    _dx_items(dy, x, dx, q * per, tl.minimum(q * per + per, items), items - 1, a, cx, c0, cm,
              jn, js, offs, goffs, ooffs, TN, N, S, sN, sS, gN, gS, oN, oS, TRAIN, ACC, I64, BN,
              BS, ST)  # fmt: skip


@triton.jit
def _dx_items(dy, x, dx, lo, hi, flip, a, cx, c0, cm, jn, js, offs, goffs, ooffs, TN, N, S,
              sN, sS, gN, gS, oN, oS, TRAIN: tl.constexpr, ACC: tl.constexpr,
              I64: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr, ST: tl.constexpr):  # fmt: skip
    """dx = a*dy + cx*x + c0 (training; a*dy in eval) over items flip - i, i in [lo, hi)."""
    for i in tl.range(lo, hi, num_stages=ST):
        n0, s0, rm = _item(flip - i, TN, N, S, jn, js, BN, BS)
        m = cm[:, None] & rm[None, :]
        g = tl.load(dy + _base(n0, s0, gN, gS, I64) + goffs, mask=m, other=0).to(ACC)
        d = g * a[:, None]
        if TRAIN:
            v = tl.load(x + _base(n0, s0, sN, sS, I64) + offs, mask=m, other=0).to(ACC)
            d += v * cx[:, None] + c0[:, None]
        tl.store(dx + _base(n0, s0, oN, oS, I64) + ooffs, d.to(dx.dtype.element_ty), mask=m)


# -- resident: a channel block's whole (N, S) in one tile (small maps) ----------------
# One program per channel block holds every element of its channels in registers:
# statistics, running-stat update and normalisation in one launch (one read, one
# write); the backward's sums and dx likewise. For maps whose launches, not their
# bytes, set the time (ResNet-50's 7x7 and 14x14 layers at batch 32).


@triton.jit
def _resident_mask(cm, jn, js, N, S):
    return cm[:, None] & ((jn < N) & (js < S))[None, :]


@triton.jit
def _bn_resident_fwd_kernel(
    x, y, w, b, rmean, rvar, smean, sinv,
    C, N, S, sN, sC, sS, yN, yC, yS, momentum, eps,
    HAS_RUN: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, Y_AS_X: tl.constexpr,
    ACC: tl.constexpr, I64: tl.constexpr, AL: tl.constexpr,
    BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr,
):  # fmt: skip
    """Training forward of BC channels whose N x S elements fit one tile: mean, then
    the variance about it (two passes over registers, not Welford), invstd and the
    running stats, then y."""
    S = as_multiple(S, AL)
    sN, sC = _nc(sN, sC, AL)
    yN, yC = _nc(yN, yC, AL)
    c, cm, jn, js = _lanes(tl.program_id(0), C, BC, BN, BS)
    m = _resident_mask(cm, jn, js, N, S)
    offs = _offsets(c, jn, js, sN, sC, sS, I64)
    v = tl.load(x + offs, mask=m, other=0).to(ACC)
    n = (N * S).to(ACC)
    mean = tl.sum(v, 1) / n
    d = tl.where(m, v - mean[:, None], 0)
    var = tl.sum(d * d, 1) / n
    _bn_finish(c, cm, n, mean, var * n, rmean, rvar, smean, sinv, momentum, eps, HAS_RUN, ACC)
    scale = 1.0 / tl.sqrt(var + eps)
    if HAS_W:
        scale = scale * tl.load(w + c, mask=cm, other=0).to(ACC)
    out = d * scale[:, None]
    if HAS_B:
        out += tl.load(b + c, mask=cm, other=0).to(ACC)[:, None]
    yoffs = offs if Y_AS_X else _offsets(c, jn, js, yN, yC, yS, I64)
    tl.store(y + yoffs, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def _bn_resident_bwd_kernel(
    dy, x, dx, w, mean, stat, dw, db,
    C, N, S, sN, sC, sS, gN, gC, gS, oN, oC, oS, eps,
    TRAIN: tl.constexpr, IS_VAR: tl.constexpr, HAS_W: tl.constexpr, DX: tl.constexpr,
    DW: tl.constexpr, DB: tl.constexpr, G_AS_X: tl.constexpr, O_AS_X: tl.constexpr,
    ACC: tl.constexpr, I64: tl.constexpr, AL: tl.constexpr,
    BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr,
):  # fmt: skip
    """Backward of BC channels whose N x S elements fit one tile: the sums of dy and
    dy * (x - mean), dweight and dbias, then dx, from one read of x and dy."""
    S = as_multiple(S, AL)
    sN, sC = _nc(sN, sC, AL)
    gN, gC = _nc(gN, gC, AL)
    oN, oC = _nc(oN, oC, AL)
    c, cm, jn, js = _lanes(tl.program_id(0), C, BC, BN, BS)
    m = _resident_mask(cm, jn, js, N, S)
    offs = _offsets(c, jn, js, sN, sC, sS, I64)
    goffs = offs if G_AS_X else _offsets(c, jn, js, gN, gC, gS, I64)
    g = tl.load(dy + goffs, mask=m, other=0).to(ACC)
    v = tl.load(x + offs, mask=m, other=0).to(ACC)
    invstd = _invstd(stat, c, cm, eps, IS_VAR, ACC)
    mu = tl.load(mean + c, mask=cm, other=0).to(ACC)
    xc = tl.where(m, v - mu[:, None], 0)
    sdy = tl.sum(g, 1)
    dot = tl.sum(g * xc, 1) * invstd
    _store_dw_db(dw, db, c, cm, dot, sdy, DW, DB)
    if DX:
        a, cx, c0 = _dx_coefficients(w, c, cm, invstd, mu, sdy, dot, (N * S).to(ACC), HAS_W,
                                     TRAIN, ACC)  # fmt: skip
        d = g * a[:, None] + v * cx[:, None] + c0[:, None]
        ooffs = offs if O_AS_X else _offsets(c, jn, js, oN, oC, oS, I64)
        tl.store(dx + ooffs, d.to(dx.dtype.element_ty), mask=m)
