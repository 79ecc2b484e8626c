"""Batch norm in one launch for maps too large for one program's registers and small
enough for the L2 cache (batch_norm.py `_Plan.coop`): the channel block's programs
(every program of the grid resident at once: at most the driver's programs a
multiprocessor) each reduce their items, publish their partials and wait at a barrier
for their channel block's other programs; then each merges the partials (the same
order in every program: deterministic), the first of the block writes the statistics
(and the running stats, or dweight and dbias), and each normalises (computes dx for)
its own items, last first: the reduction read them a moment before, so they come
from L2. One launch, one read of the activation from DRAM, where the two-launch
kernels wait for a kernel boundary and a last-arriving program's merge.

A program spins until all of its block have arrived: a grid larger than what the
GPU holds at once would never finish, and under the interpreter (programs one after
another) none would; only the cuda driver's spec enables it, with the grid bounded.
The counters (ops/_launch.py arrival_counters, family "batch_norm_coop": arrivals,
then departures at DEPART) are re-armed by the last program to leave.
"""

import triton
import triton.language as tl

from .batch_norm_kernels import (
    _bn_finish,
    _chan_merge,
    _dx_coefficients,
    _dx_items,
    _grad_sums_items,
    _invstd,
    _nc,
    _normalise_items,
    _offsets,
    _split_program,
    _store_dw_db,
    _store_partials,
    _sums_merge,
    _welford_items,
)
from ._common import as_multiple

DEPART = tl.constexpr(1 << 13)  # departure counters' offset in the counter array


@triton.jit
def _wait_for_block(sync, cb, nsplit):
    """Arrive at channel block cb's barrier and wait until its nsplit programs have (the
    partials stored before are then visible: release / acquire)."""
    tl.debug_barrier()  # every warp's partial is written before the arrival
    tl.atomic_add(sync + cb, 1, sem="release")
    arrived = tl.atomic_add(sync + cb, 0, sem="acquire")
    while arrived < nsplit:
        arrived = tl.atomic_add(sync + cb, 0, sem="acquire")


@triton.jit
def _leave_block(sync, cb, nsplit):
    """Leave the barrier; the last to leave (all have passed the wait) re-arms it."""
    tl.debug_barrier()
    if tl.atomic_add(sync + DEPART + cb, 1) == nsplit - 1:
        tl.atomic_xchg(sync + cb, 0)
        tl.atomic_xchg(sync + DEPART + cb, 0)


@triton.jit
def _bn_coop_fwd_kernel(
    x, y, w, b, rmean, rvar, smean, sinv, part, sync,
    C, N, S, sN, sC, sS, yN, yC, yS, TN, TS, items, per, full, full_nv, tail_nv, momentum, eps,
    HAS_RUN: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, Y_AS_X: tl.constexpr,
    ACC: tl.constexpr, I64: tl.constexpr, AL: tl.constexpr, SPLIT_P: tl.constexpr,
    BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr, ST: tl.constexpr,
):  # fmt: skip
    """Training forward: statistics (Welford), the block's barrier, merge, running-stat
    update (the block's first program), then y."""
    S = as_multiple(S, AL)
    sN, sC = _nc(sN, sC, AL)
    yN, yC = _nc(yN, yC, AL)
    cb, sp, nsplit, c, cm, jn, js, start, end = _split_program(C, per, items, BC, BN, BS)
    offs = _offsets(c, jn, js, sN, sC, sS, I64)
    _, pmean, pm2 = _welford_items(x, start, end, c, cm, jn, js, offs, TN, N, S, sN, sS, TS,
                                   items, full, full_nv, tail_nv, ACC, I64, BN, BS, ST)  # fmt: skip
    _store_partials(part, sp, nsplit, C, c, cm, pmean, pm2)
    _wait_for_block(sync, cb, nsplit)
    total, mean, m2 = _chan_merge(part, c, cm, C, nsplit, per, items, full, full_nv, tail_nv,
                                  SPLIT_P, ACC)  # fmt: skip
    _leave_block(sync, cb, nsplit)
    if sp == 0:
        _bn_finish(c, cm, total, mean, m2, rmean, rvar, smean, sinv, momentum, eps, HAS_RUN,
                   ACC)  # fmt: skip
    scale = 1.0 / tl.sqrt(m2 / total + eps)
    if HAS_W:
        scale = scale * tl.load(w + c, mask=cm, other=0).to(ACC)
    shift = -mean * scale
    if HAS_B:
        shift += tl.load(b + c, mask=cm, other=0).to(ACC)
    yoffs = offs if Y_AS_X else _offsets(c, jn, js, yN, yC, yS, I64)
    _normalise_items(x, y, start, end, start + end - 1, scale, shift, cm, jn, js, offs, yoffs,
                     TN, N, S, sN, sS, yN, yS, ACC, I64, BN, BS, ST)  # fmt: skip


@triton.jit
def _bn_coop_bwd_kernel(
    dy, x, dx, w, mean, stat, dw, db, part, sync,
    C, N, S, sN, sC, sS, gN, gC, gS, oN, oC, oS, TN, items, per, count, eps,
    TRAIN: tl.constexpr, IS_VAR: tl.constexpr, HAS_W: tl.constexpr, DX: tl.constexpr,
    DW: tl.constexpr, DB: tl.constexpr, G_AS_X: tl.constexpr, O_AS_X: tl.constexpr,
    ACC: tl.constexpr, I64: tl.constexpr, AL: tl.constexpr, SPLIT_P: tl.constexpr,
    BC: tl.constexpr, BN: tl.constexpr, BS: tl.constexpr, ST: tl.constexpr,
):  # fmt: skip
    """Backward: the sums of dy and dy * (x - mean), the block's barrier, merge, dweight
    and dbias (the block's first program), then dx."""
    S = as_multiple(S, AL)
    sN, sC = _nc(sN, sC, AL)
    gN, gC = _nc(gN, gC, AL)
    oN, oC = _nc(oN, oC, AL)
    cb, sp, nsplit, c, cm, jn, js, start, end = _split_program(C, per, items, BC, BN, BS)
    mu = tl.load(mean + c, mask=cm, other=0).to(ACC)
    offs = _offsets(c, jn, js, sN, sC, sS, I64)
    goffs = offs if G_AS_X else _offsets(c, jn, js, gN, gC, gS, I64)
    sdy, sdx = _grad_sums_items(dy, x, start, end, mu[:, None], cm, jn, js, offs, goffs, TN,
                                N, S, sN, sS, gN, gS, ACC, I64, BN, BS, ST)  # fmt: skip
    _store_partials(part, sp, nsplit, C, c, cm, sdy, sdx)
    _wait_for_block(sync, cb, nsplit)
    sdy, sdx = _sums_merge(part, c, cm, C, nsplit, SPLIT_P, ACC)
    _leave_block(sync, cb, nsplit)
    invstd = _invstd(stat, c, cm, eps, IS_VAR, ACC)
    dot = sdx * invstd
    if sp == 0:
        _store_dw_db(dw, db, c, cm, dot, sdy, DW, DB)
    if DX:
        a, cx, c0 = _dx_coefficients(w, c, cm, invstd, mu, sdy, dot, count, HAS_W, TRAIN, ACC)
        ooffs = offs if O_AS_X else _offsets(c, jn, js, oN, oC, oS, I64)
        _dx_items(dy, x, dx, start, end, start + end - 1, a, cx, c0, cm, jn, js, offs, goffs,
                  ooffs, TN, N, S, sN, sS, gN, gS, oN, oS, TRAIN, ACC, I64, BN, BS, ST)  # fmt: skip
