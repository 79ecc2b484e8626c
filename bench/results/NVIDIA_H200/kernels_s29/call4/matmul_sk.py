"""The matrix products' stream-K kernel: one program a slot of the GPU (multiprocessors x
programs a multiprocessor), each over an equal run of the product's (output tile,
step of K) iterations, tile by tile in grouped order.

A product whose tiles leave the last wave of programs part empty (ResNet-50's
channels_last 1x1 convolutions at batch 32: 6,272 x 1,024 -> 512 is 98 tiles of
128 x 256, or 196 of 128 x 128, for 132 multiprocessors) waits on its fullest
multiprocessors; split along K instead, every program does the same number of steps.
A program's run covers whole tiles, stored as the pointer kernel stores them, and at
most two partial ones, its first and its last: those go to float32 scratch (two slots a
program), and the last of a tile's programs to arrive (counted in `arrivals`) sums the
tile's partials in program order (deterministic: the same sum whoever arrives last),
stores it and re-arms the tile's counter. No program waits for another.

The tuner (ops/matmul.py `_bmm`, family "mm") times it beside the pointer and TMA
kernels (`candidates`); the launch (`run`) passes the programs, the kernel works out the
runs from the sizes, so that a launch plan replays it for any size of the bucket.
"""

import torch
import triton
import triton.language as tl

from ._launch import ARRIVALS, arrival_counters, launch
from ._symbolic import empty
from .matmul import _mm_store, grouped
from ..backends import spec

SK = "sk"  # a candidate's sixth element: this kernel (its seventh: programs a multiprocessor)
FLATTEN = False  # the tile loop and its steps' loop pipelined as one (tl.range flatten)


@triton.jit
def _owner(i, P, total):
    """The program whose run holds iteration i (runs: [p * total // P, (p+1) * total // P))."""
    return ((i + 1) * P - 1) // total


@triton.jit
def _mm_sk_kernel(
    a, b, c, bias, ws, arrivals, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn, s_xm, s_xn,
    alpha, beta, HAS_BIAS: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr, EVEN_K: tl.constexpr, GROUP_M: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, FLATTEN: tl.constexpr = False,
):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)
    P = tl.num_programs(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    steps = tl.cdiv(K, BLOCK_K)
    total = (tiles_m * tiles_n).to(tl.int64) * steps
    lo = pid * total // P
    hi = (pid + 1) * total // P
    rk = tl.arange(0, BLOCK_K)
    part_tile = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    # the tiles the run touches, each over its steps [k0, k1) inside the run
    for t in tl.range(lo // steps, tl.where(hi > lo, tl.cdiv(hi, steps), lo // steps),
                      flatten=FLATTEN):  # fmt: skip
        k0 = tl.maximum(lo - t * steps, 0)
        k1 = tl.minimum(hi - t * steps, steps)
        it = t * steps + k0
        pid_m, pid_n = grouped(t, tiles_m, tiles_n, GROUP_M)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        ra = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
        rb = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
        kb = k0 * BLOCK_K
        a_ptr = a + ra[:, None].to(tl.int64) * s_am + (kb + rk[None, :]) * s_ak
        b_ptr = b + rb[None, :].to(tl.int64) * s_bn + (kb + rk[:, None]) * s_bk
        acc = tl.zeros((BLOCK_M, BLOCK_N), ACC)
        for kk in range(k0, k1):
            if EVEN_K:
                at = tl.load(a_ptr)
                bt = tl.load(b_ptr)
            else:
                k = kk * BLOCK_K + rk
                at = tl.load(a_ptr, mask=k[None, :] < K, other=0)
                bt = tl.load(b_ptr, mask=k[:, None] < K, other=0)
            a_ptr += BLOCK_K * s_ak
            b_ptr += BLOCK_K * s_bk
            if UPCAST:
                at = at.to(tl.float32)
                bt = bt.to(tl.float32)
            acc += tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)
        if (k0 == 0) & (k1 == steps):
            _mm_store(acc, c, bias, 0, rm, rn, M, N, 0, s_cm, s_cn, 0, s_xm, s_xn, alpha,
                      beta, HAS_BIAS, ACC)  # fmt: skip
        else:
            # slot 2p: the program's first run (it starts inside the tile), 2p + 1: its last
            slot = 2 * pid + (it != lo).to(tl.int64)
            tl.store(ws + slot * (BLOCK_M * BLOCK_N) + part_tile, acc)
            tl.debug_barrier()  # every warp's partial is written before the arrival
            first = _owner(t * steps, P, total)
            last_p = _owner(t * steps + steps - 1, P, total)
            if tl.atomic_add(arrivals + t, 1) == last_p - first:
                tl.debug_barrier()
                acc = tl.zeros((BLOCK_M, BLOCK_N), ACC)
                for q in range(first, last_p + 1):
                    q_slot = 2 * q + (q * total // P < t * steps).to(tl.int64)
                    acc += tl.load(ws + q_slot * (BLOCK_M * BLOCK_N) + part_tile,
                                   cache_modifier=".cg")  # fmt: skip
                tl.atomic_xchg(arrivals + t, 0)
                _mm_store(acc, c, bias, 0, rm, rn, M, N, 0, s_cm, s_cn, 0, s_xm, s_xn, alpha,
                          beta, HAS_BIAS, ACC)  # fmt: skip


# tile shapes (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) the stream-K kernel is timed at
TILES = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3), (128, 128, 64, 4, 4)]


def candidates(M, N, K, batch):
    """Stream-K configurations (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, SK, programs a
    multiprocessor) for the tuner to time: for one matrix (batch 1) whose output tiles,
    under a tile shape of TILES, fill their last wave less than 85%, for each of the
    driver's programs a multiprocessor for the tile (`mm_stream_k_occupancy`), with at
    least 4 steps of K a program."""
    if batch != 1:
        return []
    out = []
    for cfg in TILES:
        tiles = -(-M // cfg[0]) * -(-N // cfg[1])
        for occupancy in spec("mm_stream_k_occupancy", *cfg) or ():
            slots = occupancy * (spec("multiprocessors") or 1)
            waves = tiles / slots
            steps = -(-K // cfg[2])
            if tiles > ARRIVALS or waves / -(-tiles // slots) >= 0.85 or tiles * steps < 4 * slots:
                continue
            out.append((*cfg, SK, occupancy))
    return out


def run(a, b, c, x, cfg, shapes, strides, alpha, beta, has_bias, acc, upcast, precision, even_k):
    """Launches the stream-K kernel with `cfg` (candidates) on a matrix product."""
    bm, bn, bk, warps, stages, _, occupancy = cfg
    (_, M, K), N = shapes[0], shapes[1][2]
    a_st, b_st, c_st, x_st = strides
    programs = occupancy * (spec("multiprocessors") or 1)
    ws = empty((2 * programs * bm * bn,), torch.float32, a.device)
    launch(
        _mm_sk_kernel, (programs,), a, b, c, x, ws, arrival_counters("split_k", a.device),
        M, N, K, *a_st[1:], *b_st[1:], *c_st[1:], *x_st[1:], alpha, beta,
        HAS_BIAS=has_bias, ACC=acc, PRECISION=precision, UPCAST=upcast, EVEN_K=even_k,
        GROUP_M=8, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, FLATTEN=FLATTEN, num_warps=warps,
        num_stages=stages,
    )  # fmt: skip
