"""Stride-1 2-d convolutions as an implicit GEMM whose operands come in through Hopper's
tensor memory accelerator (TMA): the tuner's candidates beside conv_igemm.py's kernel.

conv_igemm.py's kernel gathers a tile of A (BM result pixels x BK channels) row by row:
each row's pixel, its bounds and its address are integer work in every step of the
reduction, and the loads are per-thread copies with masks. For a stride-1, dilation-1
convolution (ResNet's 3x3 layers, forward and input gradient) the pixels a kernel tap
reads for a box of result pixels (BI images x BH rows x BW columns) are a box of the
same shape, shifted by the tap: one TMA load of a 4-d box from the channels-inner input
(N, H, W, C), the hardware zero-filling the parts outside the image (the padding), no
address arithmetic and no masks in the loop. The weight's (tap, channel block, column
block) tile is a 3-d box the same way, and the result box leaves through a descriptor
too (clipped at the map's edges). Maps narrower than a power of two leave part of each
box idle (7x7 in 8x8: 77% of the products used), which the tuner weighs.

Under ncu on an H200 (session 28, channels_last ResNet-50 at batch 32, bf16) the gathering
kernel issued one instruction every 4 cycles per scheduler with 1.5 warps resident
(occupancy bound by registers and shared memory), 27.3 us for 512 -> 512 3x3 at 7x7
against cuDNN's 18.8 (a warp-specialised TMA kernel, 5 stages).

Descriptors are made on the device (matmul_tma.py: a global scratch buffer a program,
allocated by Triton's allocator and by launch plans on replay).
"""

import torch
import triton
import triton.language as tl

from ._common import tl_float_acc
from ._launch import cdiv, launch, next_pow2
from .conv_igemm import _next_step
from .matmul_tma import TMA, ensure_allocator
from ..backends import spec

# (BM, BN, BK, warps, stages, TMA): BM result pixels as a box (box()), BN columns.
CANDIDATES = [
    (64, 128, 64, 4, 4, TMA),
    (128, 128, 64, 8, 4, TMA),
    (128, 64, 64, 4, 4, TMA),
    (128, 256, 64, 8, 3, TMA),
]


@triton.jit
def _igemm_tma_kernel(
    x, wt, b, y, N, H, W, C, OH, OW, CO, KP, K1, K2, wsk, wsm, o1, o2,
    FLIP: tl.constexpr, W_T: tl.constexpr, HAS_BIAS: tl.constexpr, UPCAST: tl.constexpr,
    PRECISION: tl.constexpr, ACC: tl.constexpr,
    BI: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    # x (N, H, W, C) and y (N, OH, OW, CO) contiguous; the weight W[tap, c, co] as
    # (KP, CO, C) with its channels contiguous (W_T) or (KP, C, CO) with its columns
    # contiguous, tap and middle strides wsk, wsm. Result pixel (oh, ow) reads, at tap
    # (k1, k2), input pixel (oh + o1 + k1, ow + o2 + k2), or with FLIP (the adjoint
    # gather) (oh + o1 - k1, ow + o2 - k2).
    BM: tl.constexpr = BI * BH * BW
    x_d = tl.make_tensor_descriptor(
        x, shape=[N, H, W, C], strides=[H * W * C, W * C, C, 1], block_shape=[BI, BH, BW, BK]
    )
    if W_T:
        w_d = tl.make_tensor_descriptor(
            wt, shape=[KP, CO, C], strides=[wsk, wsm, 1], block_shape=[1, BN, BK]
        )
    else:
        w_d = tl.make_tensor_descriptor(
            wt, shape=[KP, C, CO], strides=[wsk, wsm, 1], block_shape=[1, BK, BN]
        )
    y_d = tl.make_tensor_descriptor(
        y, shape=[N, OH, OW, CO], strides=[OH * OW * CO, OW * CO, CO, 1],
        block_shape=[BI, BH, BW, BN],
    )  # fmt: skip
    tw = tl.cdiv(OW, BW)
    th = tl.cdiv(OH, BH)
    pid = tl.program_id(0)
    n0 = (pid // (tw * th)) * BI
    h0 = ((pid // tw) % th) * BH
    w0 = (pid % tw) * BW
    c0 = tl.program_id(1) * BN
    blocks = tl.cdiv(C, BK)
    # the step's (channel block, tap), counted on (conv_igemm._next_step)
    cb = pid * 0
    k1 = pid * 0
    k2 = pid * 0
    kpos = pid * 0
    acc = tl.zeros((BM, BN), ACC)
    for _ in range(KP * blocks):
        if FLIP:
            ih = h0 + o1 - k1
            iw = w0 + o2 - k2
        else:
            ih = h0 + o1 + k1
            iw = w0 + o2 + k2
        at = x_d.load([n0, ih, iw, cb * BK]).reshape(BM, BK)
        if W_T:
            bt = w_d.load([kpos, c0, cb * BK]).reshape(BN, BK).T
        else:
            bt = w_d.load([kpos, cb * BK, c0]).reshape(BK, BN)
        if UPCAST:
            at = at.to(tl.float32)
            bt = bt.to(tl.float32)
        acc = tl.dot(at, bt, acc, input_precision=PRECISION, out_dtype=ACC)
        cb, _, k1, k2, nxt = _next_step(cb, blocks, 0, k1, k2, K1, K2)
        kpos += nxt.to(tl.int32)
    if HAS_BIAS:
        rn = c0 + tl.arange(0, BN)
        acc += tl.load(b + rn, mask=rn < CO, other=0).to(ACC)[None, :]
    v = acc
    if y.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    y_d.store([n0, h0, w0, c0], v.to(y.dtype.element_ty).reshape(BI, BH, BW, BN))


def box(OH, OW, bm):
    """(BI, BH, BW): a tile of `bm` result pixels as BI images x BH rows x BW columns,
    each side a power of two: as wide as the map (up to bm), then as tall, then images."""
    bw = min(next_pow2(OW), bm)
    bh = min(next_pow2(OH), bm // bw)
    return bm // (bh * bw), bh, bw


def _aligned(*tensors):
    return all(t.data_ptr() % 16 == 0 for t in tensors)


def operands(xi, wop, y_inner, kernel_sp, stride, dilation, groups):
    """(weight's (W_T, tap stride, middle stride)) where the TMA kernel takes this
    convolution, else None: the driver has TMA (spec "mm_tma"), a 2-d fp16/bf16
    convolution of one group, stride 1 and dilation 1, every row of x, W and y a
    multiple of 16 bytes and each 16-byte aligned. Sizes and strides are compared, so a
    launch plan recorded here is guarded on them."""
    if not spec("mm_tma") or xi.dtype not in (torch.float16, torch.bfloat16):
        return None
    if xi.dim() != 4 or groups != 1 or any(s != 1 for s in stride) or any(d != 1 for d in dilation):
        return None
    wt, KP, cr, co, (_, wsk, wsc, wsn) = wop
    if cr % 8 or co % 8 or not _aligned(xi, wt, y_inner):
        return None
    wsk = wsk if KP > 1 else 8  # one tap: its stride never used (a descriptor needs one)
    if wsc == 1 and wsk % 8 == 0 and wsn % 8 == 0:
        return True, wsk, wsn
    if wsn == 1 and wsk % 8 == 0 and wsc % 8 == 0:
        return False, wsk, wsc
    return None


def run(xi, wop, bias, y_inner, kernel_sp, padding, scatter, w_layout, cfg, upcast, precision):
    """Launches the TMA kernel with `cfg` (BM, BN, BK, warps, stages, TMA) for x (N, H, W,
    C) channels-inner into y (N, OH, OW, CO) channels-inner; `w_layout` from operands()."""
    bm, bn, bk, warps, stages, _ = cfg
    wt, KP, cr, co, _ = wop
    N, H, W, _ = xi.shape
    OH, OW = y_inner.shape[1:3]
    bi, bh, bw = box(OH, OW, bm)
    w_t, wsk, wsm = w_layout
    sign = 1 if scatter else -1  # scatter: pixel o reads o + p - k; forward o - p + k
    ensure_allocator(xi.device)
    launch(
        _igemm_tma_kernel,
        (cdiv(N, bi) * cdiv(OH, bh) * cdiv(OW, bw), cdiv(co, bn)),
        xi, wt, bias if bias is not None else y_inner, y_inner, N, H, W, cr, OH, OW, co, KP,
        kernel_sp[0], kernel_sp[1], wsk, wsm, sign * padding[0], sign * padding[1],
        FLIP=scatter, W_T=w_t, HAS_BIAS=bias is not None, UPCAST=upcast, PRECISION=precision,
        ACC=tl_float_acc(xi.dtype), BI=bi, BH=bh, BW=bw, BN=bn,
        BK=min(bk, max(16, next_pow2(cr))), num_warps=warps, num_stages=stages,
    )  # fmt: skip


def candidates(co):
    """CANDIDATES whose column tile is at most twice the columns (wider ones only repeat
    work)."""
    return [c for c in CANDIDATES if c[1] <= max(64, 2 * next_pow2(co))]
