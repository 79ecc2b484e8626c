"""A warp-specialised persistent matrix product for Hopper, written in Gluon.

One program a multiprocessor walks the output tiles in grouped order. Its warps split
into two partitions that meet at mbarriers over a ring of shared-memory stages:

- a loader (one warp, few registers) issues the tensor memory accelerator's copies of
  A's and B's blocks into the next free stage, running ahead of the math by the ring's
  depth, across tiles: the next tile's first blocks arrive while this tile's results
  are being stored;
- the default partition (4 or 8 warps, one or two warp groups) waits for a stage, runs
  wgmma on it asynchronously with one product in flight, frees the stage the finished
  product read, and at a tile's end converts the accumulator and stores it through a
  descriptor (an asynchronous bulk store, waited for only before the buffer's next use).

Products whose output tiles fill under half the multiprocessors (weight gradients: M x
N small, K the tokens or pixels) may also split K (SPLIT): a program's work units are
then (tile, run of K's steps) pairs, each storing its float32 partial tile into scratch,
and a second launch (_split_sum_kernel) adds the runs in order (deterministic).

Operands are 16-bit floats with a unit stride along one side and 16-byte aligned
strides (what a descriptor takes); A may be stored transposed (K x M, a weight
gradient's x.t()), B stored transposed (N x K, a Linear's weight). Descriptors are made
on the device (global scratch, as ops/matmul_tma.py's). Gluon kernels do not run under
Triton's interpreter: this is a cuda-driver kernel only.
"""

import functools

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from . import matmul_tma
from .matmul import grouped
from ._launch import cdiv, launch
from ._symbolic import empty
from ..backends import spec

GL_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}
WS = "ws"  # a candidate's last element: this kernel
# the configurations the tuner times beside the other kernels' (tests_gpu/harness/mm_ws.py)
# (session 30, H200: 128 x 128 tiles up to 86-109% of cuBLAS on products of 256 to 768
# columns at 4,096-25,088 rows; 64 x 128 tiles 80-99% on ResNet-50's channels_last 1x1
# layers of 1,568 and 6,272 pixels, where the other kernels' best ran at 51-75%)
CANDIDATES = [(128, 256, 64, 8, 3, WS), (128, 128, 64, 4, 4, WS), (64, 256, 64, 4, 4, WS),
              (64, 128, 64, 4, 6, WS)]  # fmt: skip
# tiles that also take K split where the output tiles fill under half the multiprocessors
# (tests_gpu/harness/mm_ws_split.py, session 34, H200, weight gradients "tn" at 6,272 to
# 100,352 rows of K: the best split was the multiprocessors over the tiles, or one under)
SPLIT_TILES = [(128, 128, 64, 4, 4), (64, 128, 64, 4, 6)]


def candidates(M, N, K):
    """CANDIDATES, then SPLIT_TILES with K split in (multiprocessors // tiles) runs of at
    least 4 steps each, where that is 2 or more."""
    out = list(CANDIDATES)
    sms = spec("multiprocessors") or 1
    for bm, bn, bk, *rest in SPLIT_TILES:
        tiles = cdiv(M, bm) * cdiv(N, bn)
        split = min(sms // tiles, cdiv(K, bk) // 4)
        if split >= 2:
            out.append((bm, bn, bk, *rest, split, WS))
    return out


# the bulk copies' names: Triton 3.6's, renamed async_load / async_store by 3.9
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


@gluon.jit
def _loader(a, b, s_a, s_b, a_bufs, b_bufs, ready, empty, M, N, K,
            A_T: gl.constexpr, B_T: gl.constexpr, GROUP_M: gl.constexpr,
            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
            SPLIT: gl.constexpr, A_LAYOUT: gl.constexpr, B_LAYOUT: gl.constexpr):  # fmt: skip
    # The descriptors are made here, by the warp that uses them (a descriptor written
    # by other warps reaches the copy engine only after a proxy fence of their own).
    if A_T:
        a_desc = tma.make_tensor_descriptor(a, [K, M], [s_a, 1], [BLOCK_K, BLOCK_M], A_LAYOUT)
    else:
        a_desc = tma.make_tensor_descriptor(a, [M, K], [s_a, 1], [BLOCK_M, BLOCK_K], A_LAYOUT)
    if B_T:
        b_desc = tma.make_tensor_descriptor(b, [N, K], [s_b, 1], [BLOCK_N, BLOCK_K], B_LAYOUT)
    else:
        b_desc = tma.make_tensor_descriptor(b, [K, N], [s_b, 1], [BLOCK_K, BLOCK_N], B_LAYOUT)
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    steps = gl.cdiv(K, BLOCK_K)
    nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
    it = 0
    for u in range(gl.program_id(0), tiles_m * tiles_n * SPLIT, gl.num_programs(0)):
        pm, pn = grouped(u // SPLIT, tiles_m, tiles_n, GROUP_M)
        m0 = pm * BLOCK_M
        n0 = pn * BLOCK_N
        sp = u % SPLIT
        for ks in range(sp * steps // SPLIT, (sp + 1) * steps // SPLIT):
            s = it % STAGES
            # a stage starts free: its first wait is on the phase before the first
            mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(s), nbytes)
            k0 = ks * BLOCK_K
            if A_T:
                _tma_load(a_desc, [k0, m0], ready.index(s), a_bufs.index(s))
            else:
                _tma_load(a_desc, [m0, k0], ready.index(s), a_bufs.index(s))
            if B_T:
                _tma_load(b_desc, [n0, k0], ready.index(s), b_bufs.index(s))
            else:
                _tma_load(b_desc, [k0, n0], ready.index(s), b_bufs.index(s))
            it += 1


@gluon.jit
def _consumer(c, s_c, alpha, a_bufs, b_bufs, ready, empty, c_smem, M, N, K, MP,
              A_T: gl.constexpr, B_T: gl.constexpr, GROUP_M: gl.constexpr,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
              SPLIT: gl.constexpr, MMA_LAYOUT: gl.constexpr, C_LAYOUT: gl.constexpr):  # fmt: skip
    # SPLIT > 1: c is float32 scratch of SPLIT blocks of MP rows (M padded to whole
    # tiles), each split's partial tile stored in its block (summed by _split_sum_kernel)
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    rows = M if SPLIT == 1 else MP * SPLIT
    c_desc = tma.make_tensor_descriptor(c, [rows, N], [s_c, 1], [BLOCK_M, BLOCK_N], C_LAYOUT)
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    steps = gl.cdiv(K, BLOCK_K)
    it = 0  # stages are numbered over all the program's tiles, as the loader's
    for u in range(gl.program_id(0), tiles_m * tiles_n * SPLIT, gl.num_programs(0)):
        pm, pn = grouped(u // SPLIT, tiles_m, tiles_n, GROUP_M)
        sp = u % SPLIT
        k_lo = sp * steps // SPLIT
        acc = gl.zeros((BLOCK_M, BLOCK_N), gl.float32, MMA_LAYOUT)
        for ks in range(k_lo, (sp + 1) * steps // SPLIT):
            s = it % STAGES
            mbarrier.wait(ready.index(s), (it // STAGES) & 1)
            a_s = a_bufs.index(s)
            if A_T:
                a_s = a_s.permute((1, 0))
            b_s = b_bufs.index(s)
            if B_T:
                b_s = b_s.permute((1, 0))
            acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
            # one product in flight: the one before is done, its stage free
            acc = warpgroup_mma_wait(1, deps=(acc,))
            mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), count=1, pred=ks > k_lo)
            it += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), count=1)
        tma.store_wait(0)  # the last tile's store has left c_smem
        c_smem.store((acc * alpha).to(c_desc.dtype))
        fence_async_shared()
        _tma_store(c_desc, [sp * MP + pm * BLOCK_M, pn * BLOCK_N], c_smem)
    tma.store_wait(0)


@gluon.jit
def _mm_ws_kernel(a, b, c, M, N, K, s_a, s_b, s_c, alpha, MP,
                  A_T: gl.constexpr, B_T: gl.constexpr, GROUP_M: gl.constexpr,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  SPLIT: gl.constexpr, STAGES: gl.constexpr, A_LAYOUT: gl.constexpr,
                  B_LAYOUT: gl.constexpr, C_LAYOUT: gl.constexpr, MMA_LAYOUT: gl.constexpr,
                  LOADER_REGS: gl.constexpr):  # fmt: skip
    # c = alpha * a @ b: a (M, K) with row stride s_a, or stored (K, M) with A_T; b (K, N), or
    # stored (N, K) with B_T; c (M, N) with row stride s_c, or with SPLIT > 1 each of
    # SPLIT runs of K's steps into its own block of MP rows of float32 scratch c.
    if A_T:
        a_bufs = gl.allocate_shared_memory(a.dtype.element_ty, [STAGES, BLOCK_K, BLOCK_M], A_LAYOUT)
    else:
        a_bufs = gl.allocate_shared_memory(a.dtype.element_ty, [STAGES, BLOCK_M, BLOCK_K], A_LAYOUT)
    if B_T:
        b_bufs = gl.allocate_shared_memory(b.dtype.element_ty, [STAGES, BLOCK_N, BLOCK_K], B_LAYOUT)
    else:
        b_bufs = gl.allocate_shared_memory(b.dtype.element_ty, [STAGES, BLOCK_K, BLOCK_N], B_LAYOUT)
    c_smem = gl.allocate_shared_memory(c.dtype.element_ty, [BLOCK_M, BLOCK_N], C_LAYOUT)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    gl.warp_specialize(
        [
            (_consumer, (c, s_c, alpha, a_bufs, b_bufs, ready, empty, c_smem, M, N, K, MP,
                         A_T, B_T, GROUP_M, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT, MMA_LAYOUT,
                         C_LAYOUT)),
            (_loader, (a, b, s_a, s_b, a_bufs, b_bufs, ready, empty, M, N, K, A_T, B_T,
                       GROUP_M, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT, A_LAYOUT, B_LAYOUT)),
        ],
        [1],
        [LOADER_REGS],
    )  # fmt: skip


@functools.lru_cache(maxsize=None)
def _layouts(dtype, bm, bn, bk, warps, a_t, b_t, split=1):
    """The kernel's constexpr layouts for one tile configuration: A's, B's and C's
    shared-memory layouts (their blocks as stored) and wgmma's accumulator layout (warp
    groups stacked along M, 16 rows a warp, one instruction as wide as the tile allows).
    Cached: they are part of every launch's arguments."""
    dt = GL_DTYPES[dtype]
    shared = gl.NVMMASharedLayout.get_default_for
    wm = min(warps, max(4, bm // 16))
    mma = gl.NVMMADistributedLayout(
        version=[3, 0],
        warps_per_cta=[wm, warps // wm],
        instr_shape=[16, min(256, bn // (warps // wm)), 16],
    )
    return dict(
        A_LAYOUT=shared([bk, bm] if a_t else [bm, bk], dt),
        B_LAYOUT=shared([bn, bk] if b_t else [bk, bn], dt),
        C_LAYOUT=shared([bm, bn], dt if split == 1 else gl.float32),
        MMA_LAYOUT=mma,
    )


def operands(a, b, c, tma, c_shape, c_st, bt, has_bias):
    """(A's, B's, C's matmul_tma._operand answers) where the kernel takes the product:
    the driver has it (spec "mm_ws"), the operands take descriptors (`tma`, from
    matmul_tma.layout), one matrix (no batch), no bias, C row-major and aligned; else None."""
    if tma is None or bt != 1 or has_bias or not spec("mm_ws"):
        return None
    dc = matmul_tma._operand(c, c_shape, c_st)
    if dc is None or dc[0]:
        return None
    return (*tma, dc)


@triton.jit
def _split_sum_kernel(ws, c, M, N, MP, s_c, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    # c[m, n] = the SPLIT partial tiles' sum at (m, n), in split order (deterministic)
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < M * N
    acc = tl.zeros([BLOCK], tl.float32)
    for sp in tl.static_range(SPLIT):
        acc += tl.load(ws + sp * MP * N + i, mask=mask, other=0)
    tl.store(c + (i // N) * s_c + i % N, acc.to(c.dtype.element_ty), mask=mask)


def run(a, b, c, M, N, K, cfg, ops, alpha):
    """c = alpha * a @ b by the kernel under cfg = (BLOCK_M, BLOCK_N, BLOCK_K, warps,
    stages[, split of K], WS), `ops` from `operands`. One program a multiprocessor:
    those without a tile return at once (the grid does not follow the sizes, so a
    launch plan replays it for any size). Split K: each of `split` runs of K's steps
    (at most one a step) stores its float32 partial tile into scratch, and a second
    launch sums them in order into c (deterministic)."""
    bm, bn, bk, warps, stages = cfg[:5]
    split = max(1, min(cfg[5], cdiv(K, bk))) if len(cfg) == 7 else 1
    (a_t, _, _, s_a), (b_t, _, _, s_b), (_, _, _, s_c) = ops
    matmul_tma.ensure_allocator(a.device)
    # registers are set per warp group at launch: the loader's warp takes a group
    maxnreg = min(255, 65536 // ((warps + 4) * 32)) // 8 * 8
    mp, dst, s_dst = 0, c, s_c
    if split > 1:
        mp = cdiv(M, bm) * bm
        dst, s_dst = empty((split * mp, N), torch.float32, a.device), N
    launch(
        _mm_ws_kernel, (spec("multiprocessors") or 1,), a, b, dst, M, N, K, s_a, s_b, s_dst,
        alpha, mp, A_T=a_t, B_T=b_t, GROUP_M=8, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        SPLIT=split, STAGES=stages, LOADER_REGS=40,
        **_layouts(a.dtype, bm, bn, bk, warps, a_t, b_t, split), num_warps=warps,
        maxnreg=maxnreg,
    )  # fmt: skip
    if split > 1:
        launch(_split_sum_kernel, (cdiv(M * N, 1024),), dst, c, M, N, mp, s_c, SPLIT=split,
               BLOCK=1024)  # fmt: skip


def mm_ws(a, b, c, cfg=CANDIDATES[0]):
    """c = a @ b for three 2-d matrices the kernel takes (tests_gpu's harness and tests,
    on torch's cuda tensors)."""
    st = lambda t: (0, *t.stride())  # noqa: E731 -- one matrix as a batch of one
    tma = matmul_tma.layout(a, (1, *a.shape), st(a), b, (1, *b.shape), st(b), a.dtype)
    ops = operands(a, b, c, tma, (1, *c.shape), st(c), 1, False)
    if ops is None:
        raise ValueError("torch_ext: the warp-specialised product does not take these operands")
    run(a, b, c, a.shape[0], b.shape[1], a.shape[1], cfg, ops, 1.0)
