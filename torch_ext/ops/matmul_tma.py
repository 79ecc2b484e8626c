"""The matrix products' persistent TMA kernel (Hopper's tensor memory accelerator).

One program a multiprocessor walks the output tiles (batches included) in grouped
order; each tile's A and B blocks come in through device-side tensor descriptors
(tl.make_tensor_descriptor: the hardware fetches, zero-fills past the edges and
swizzles for wgmma, no address arithmetic or masks in the loop), and the tile leaves
through a descriptor too (asynchronous stores), or, with a bias or an output a descriptor
cannot take, through ops/matmul.py's epilogue (alpha, a bias times beta, any strides).
Triton pipelines the tile loop with the next tile's loads (`flatten`).

On an H200 (tests_gpu/harness/mm_tma.py, session 22) 128 x 256 tiles ran mm 4096^3 at
93-97% of cuBLAS, x @ W.t() at 99-101% and bmm 16 x 2048^3 at 99-103%, where the pointer
kernel of ops/matmul.py ran at 80-90%; in the kernel suite, still with the pointer
epilogue, the tuner's picks gave mm 98-99%, addmm 96-97%, bmm 89-93% and the
transformer GEMMs a geomean of 101%. The tuner times it beside that kernel
(`CANDIDATES`), for operands a descriptor can take (`layout`): 16-bit floats, 16-byte
aligned, one unit stride per matrix, the other strides multiples of 16 bytes (GPT-2's
50,257-wide rows are not: they keep the pointer kernel).

Descriptors made on the device need a global scratch buffer per program (128 bytes a
descriptor): Triton asks its allocator (`ensure_allocator`), and launch plans
(csrc/launch/Plan.h) allocate it on every replay.
"""

import threading

import torch
import triton
import triton.language as tl

from ._common import tl_float_acc
from ._launch import launch
from .matmul import _mm_store, grouped
from ..backends import spec

TMA = "tma"  # a candidate's last element: this kernel
# the configurations the tuner times beside the pointer kernel's
CANDIDATES = [(*t, TMA) for t in ((128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (256, 128, 64, 8, 3))]


@triton.jit
def _descriptor(x, BX, R, C, s_xb, s_xr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """The (BX, R, C) operand x (unit stride along C) in blocks of (1, BLOCK_R, BLOCK_C)."""
    return tl.make_tensor_descriptor(
        x, shape=[BX, R, C], strides=[s_xb, s_xr, 1], block_shape=[1, BLOCK_R, BLOCK_C]
    )


@triton.jit
def _mm_tma_kernel(
    a, b, c, bias, M, N, K, BATCH, BA, BB, BC, s_ab, s_a, s_bb, s_b, s_cbd, s_cb, s_cm, s_cn,
    s_xb, s_xm, s_xn, alpha, beta,
    A_T: tl.constexpr, B_T: tl.constexpr, C_TMA: tl.constexpr, HAS_BIAS: tl.constexpr,
    ACC: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr, GROUP_M: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    # A is (BA, M, K), or stored (BA, K, M) with A_T; B is (BB, K, N), or stored
    # (BB, N, K) with B_T. A batch of one (BA or BB 1) serves every batch (broadcast).
    # C_TMA: C (BC, M, N) leaves through a descriptor too (asynchronous stores, clipped
    # at the edges), else through the pointer epilogue (a bias, other strides).
    if A_T:
        a_d = _descriptor(a, BA, K, M, s_ab, s_a, BLOCK_K, BLOCK_M)
    else:
        a_d = _descriptor(a, BA, M, K, s_ab, s_a, BLOCK_M, BLOCK_K)
    if B_T:
        b_d = _descriptor(b, BB, N, K, s_bb, s_b, BLOCK_N, BLOCK_K)
    else:
        b_d = _descriptor(b, BB, K, N, s_bb, s_b, BLOCK_K, BLOCK_N)
    if C_TMA:
        c_d = _descriptor(c, BC, M, N, s_cbd, s_cm, BLOCK_M, BLOCK_N)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per = tiles_m * tiles_n
    for t in tl.range(tl.program_id(0), per * BATCH, tl.num_programs(0), flatten=True):
        batch = t // per
        pid_m, pid_n = grouped(t % per, tiles_m, tiles_n, GROUP_M)
        ia = batch % BA
        ib = batch % BB
        acc = tl.zeros((BLOCK_M, BLOCK_N), ACC)
        for k in range(0, K, BLOCK_K):
            if A_T:
                at = a_d.load([ia, k, pid_m * BLOCK_M]).reshape(BLOCK_K, BLOCK_M).T
            else:
                at = a_d.load([ia, pid_m * BLOCK_M, k]).reshape(BLOCK_M, BLOCK_K)
            if B_T:
                bt = b_d.load([ib, pid_n * BLOCK_N, k]).reshape(BLOCK_N, BLOCK_K).T
            else:
                bt = b_d.load([ib, k, pid_n * BLOCK_N]).reshape(BLOCK_K, BLOCK_N)
            if UPCAST:
                at = at.to(tl.float32)
                bt = bt.to(tl.float32)
            acc = tl.dot(at, bt, acc, input_precision=PRECISION, out_dtype=ACC)
        if C_TMA:
            out = (acc * alpha).to(c.dtype.element_ty).reshape(1, BLOCK_M, BLOCK_N)
            c_d.store([batch % BC, pid_m * BLOCK_M, pid_n * BLOCK_N], out)
        else:
            rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            _mm_store(acc, c, bias, batch.to(tl.int64), rm, rn, M, N, s_cb, s_cm, s_cn, s_xb,
                      s_xm, s_xn, alpha, beta, HAS_BIAS, ACC)  # fmt: skip


def _operand(t, shape, st):
    """(transposed, batch size, batch stride, row stride) of a (B, rows, cols) operand
    for a descriptor, or None where one cannot take it (module doc). A batch of one, or
    a broadcast batch (stride 0), is one descriptor batch (its stride: the matrix's
    extent, never used)."""
    if t.data_ptr() % 16:
        return None
    s_b, s_r, s_c = st
    if s_c == 1 and s_r % 8 == 0:
        transposed, row, rows = False, s_r, shape[1]
    elif s_r == 1 and s_c % 8 == 0:
        transposed, row, rows = True, s_c, shape[2]
    else:
        return None
    if shape[0] == 1 or s_b == 0:
        return transposed, 1, row * rows, row
    if s_b % 8:
        return None
    return transposed, shape[0], s_b, row


def layout(a, a_shape, a_st, b, b_shape, b_st, dtype):
    """(A's, B's) _operand answers where the driver has TMA (spec "mm_tma") and both
    operands fit a descriptor, else None. Strides are compared, so that a launch plan
    recorded here is guarded on them (ops/_symbolic.py)."""
    if dtype not in (torch.float16, torch.bfloat16) or not spec("mm_tma"):
        return None
    da = _operand(a, a_shape, a_st)
    db = _operand(b, b_shape, b_st)
    return None if da is None or db is None else (da, db)


_allocator = threading.local()


def ensure_allocator(device):
    """Triton's allocator for the descriptors' global scratch, in this thread (Triton
    keeps it in a context variable: each thread that launches sets its own): memory of
    `device`'s type on its current device (the launch's, under the op's device guard)."""
    if getattr(_allocator, "set", False):
        return
    kind = torch.device(device).type
    module = getattr(torch, kind)  # torch.privateuseone, or torch.cuda (kernel tests)

    def alloc(size, align, stream):
        return torch.empty(
            size, dtype=torch.int8, device=torch.device(kind, module.current_device())
        )

    triton.set_allocator(alloc)
    _allocator.set = True


def run(a, b, c, x, cfg, shapes, strides, tma, alpha, beta, has_bias, upcast, precision):
    """Launches the TMA kernel with `cfg` (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, TMA);
    C through a descriptor where it takes one and no bias is added."""
    bm, bn, bk, warps, stages, _ = cfg
    (Bt, M, K), N = shapes[0], shapes[1][2]
    (da, db), (c_st, x_st) = tma, strides
    dc = None if has_bias else _operand(c, shapes[2], c_st)
    c_tma = dc is not None and not dc[0]
    bc, s_cbd = (dc[1], dc[2]) if c_tma else (1, 0)
    ensure_allocator(a.device)
    launch(
        _mm_tma_kernel, (spec("multiprocessors") or 1, 1), a, b, c, x, M, N, K, Bt,
        da[1], db[1], bc, da[2], da[3], db[2], db[3], s_cbd, *c_st, *x_st, alpha, beta,
        A_T=da[0], B_T=db[0], C_TMA=c_tma, HAS_BIAS=has_bias, ACC=tl_float_acc(a.dtype),
        UPCAST=upcast, PRECISION=precision, GROUP_M=8, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip
