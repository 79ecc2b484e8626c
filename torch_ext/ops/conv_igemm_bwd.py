"""The convolution's weight gradient as an implicit GEMM over channels-inner operands
(the input gradient and the transposed forward are conv_igemm.py's adjoint gather):

    gw[g*CA + a, b, k] = sum_{n, o} dy[n, o, g*CA + a] * im[n, o*stride - padding + k*dilation, g*CB + b]

for the plain convolution (dy the output gradient, im the input) and, roles swapped, the
transposed one. dy and im are read channels-inner ((N, *spatial, C) contiguous; NCHW
tensors copied so first): a program owns one kernel position and a tile of (a, b), its
tiles of dy are BK pixels x BM consecutive channels and of im BK pixels x BN consecutive
channels, the pixel arithmetic done once per pixel. The reduction over (n, o) is split
into SPLIT slices written to a float32 buffer and summed in order (one slice: written
straight into the gradient; deterministic with or without
torch.are_deterministic_algorithms_enabled(); no atomics).

The loop finds each reduction row's (image, output pixel) by dividing by the map's
sizes, two divisions a row a step (three for 3-d maps): a run-time divisor costs about
twenty instructions. FASTDIV divides by a 32-bit multiply and shift instead
(_common.fdiv, exact for indices below 2**31), wherever indices fit. Bounds are one
unsigned comparison a dimension (_common.inside). For sm_90, 128 x 128 tiles of bf16:
216 SASS instructions a step, 312 before (64-bit products, two comparisons a bound,
the third division).
"""

import math
import torch
import triton
import triton.language as tl

from ._common import fastdiv, float_acc, in_map, pad3, split3, tap_rows, tl_float_acc
from ._launch import cdiv, launch
from ._tune import tuned
from ..backends import spec
from .conv_igemm import channels_inner, conv_candidates, conv_precision, needs_int64
from .conv_igemm import wide_tiles
from .reduction import sum_slices


@triton.jit
def _conv_wgrad_kernel(
    dy, im, gw, R, RS, SPLIT, G, CA, CB, OP, O1, O2, I0, I1, I2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2, wsp, wsa, wsb, wsk,
    mP, shP, m1, sh1, m2, sh2,
    FASTDIV: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr,
    IDX64: tl.constexpr, D3: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    grp = tl.program_id(2)
    kpos = tl.program_id(1) // SPLIT
    split = tl.program_id(1) % SPLIT
    tiles_n = tl.cdiv(CB, BN)
    pid = tl.program_id(0)
    ra = (pid // tiles_n) * BM + tl.arange(0, BM)  # channels a of dy
    rb = (pid % tiles_n) * BN + tl.arange(0, BN)  # channels b of im
    a_ok = ra < CA
    b_ok = rb < CB
    k0, k1, k2 = split3(kpos, K1, K2)
    dy_grp = dy + grp * CA + ra[:, None]
    im_grp = im + grp * CB + rb[None, :]
    acc = tl.zeros((BM, BN), ACC)
    if IDX64:
        r_lo = split.to(tl.int64) * RS
    else:
        r_lo = split * RS
    r_hi = tl.minimum(r_lo + RS, R)  # this slice's rows: one comparison a row
    for r_start in range(r_lo, r_hi, BK):
        r = r_start + tl.arange(0, BK)
        r_ok = r < r_hi
        n, _, _, _, i0, i1, i2 = tap_rows(r, OP, O1, O2, mP, shP, m1, sh1, m2, sh2, s0, s1, s2,
                                          p0, p1, p2, k0 * d0, k1 * d1, k2 * d2, FASTDIV, D3)  # fmt: skip
        ok = r_ok & in_map(i0, i1, i2, I0, I1, I2, D3)
        pix = ((n * I0 + i0) * I1 + i1) * I2 + i2
        dt = tl.load(dy_grp + r[None, :] * (G * CA), mask=a_ok[:, None] & r_ok[None, :], other=0)
        xt = tl.load(im_grp + pix[:, None] * (G * CB), mask=ok[:, None] & b_ok[None, :], other=0)
        if UPCAST:
            dt = dt.to(tl.float32)
            xt = xt.to(tl.float32)
        acc += tl.dot(dt, xt, input_precision=PRECISION, out_dtype=ACC)
    out = gw + split * wsp + (grp * CA + ra[:, None]) * wsa + rb[None, :] * wsb + kpos * wsk
    v = acc
    if gw.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(out, v.to(gw.dtype.element_ty), mask=a_ok[:, None] & b_ok[None, :])


# A tall tile (256 channels of dy by 128 of im) for 16-bit gradients with 256 or more
# channels a: the loop's integer work is the im operand's per-row pixel arithmetic and
# addresses, which this tile spreads over twice the products of 128 x 128 (sm_90: 254
# SASS instructions a step against 216 for half the products; 128 x 256: 334).
TALL = (256, 128, 64, 8, 3)


def tall_tiles(dtype, channels_a):
    """[TALL] under wide_tiles' rule (16-bit, 256 or more) for dy's channels, else []."""
    return [TALL] if wide_tiles(dtype, channels_a) else []


def _splits(R, work):
    """Slices of the (n, o) reduction: enough programs to fill a GPU, each long."""
    if R < 4096 or work >= 256:
        return 1
    return max(1, min(64, R // 2048, 256 // max(work, 1)))


def split_candidates(R, work):
    """The slice counts tuned beside the tiles: the rule above first, then what a driver
    proposes for `work` programs a slice (spec("conv_wgrad_splits"))."""
    return list(dict.fromkeys([_splits(R, work), *(spec("conv_wgrad_splits", R, work) or [])]))


def conv_weight_grad(dy, im, w_shape, stride, padding, dilation, groups, channels_last=False):
    """gw of shape w_shape (g*CA, CB, *kernel) (see module doc); fp32 accumulation.
    The kernel's tiles store channels b innermost (kernel-position-major), which is the
    gradient `channels_last` asks for (as torch, for a channels_last weight); else it is
    copied to NCHW once (storing NCHW from the tiles wrote a value every KP elements)."""
    N = dy.shape[0]
    ca, cb = w_shape[0] // groups, w_shape[1]
    k, o, i = pad3(w_shape[2:], 1), pad3(dy.shape[2:], 1), pad3(im.shape[2:], 1)
    s, p, d = pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)
    KP, OP = math.prod(k), math.prod(o)
    R = N * OP
    if R == 0:
        return torch.zeros(w_shape, dtype=dy.dtype, device=dy.device)
    dyi, imi = channels_inner(dy), channels_inner(im)
    upcast, precision = conv_precision(dy.dtype)

    def tiles(cfg):
        bm, bn = min(cfg[0], 256), min(cfg[1], 256)
        return bm, bn, cdiv(ca, bm) * cdiv(cb, bn) * groups * KP

    idx64 = needs_int64(dyi, imi) or R >= 1 << 31

    def run(cfg):
        bm, bn, work = tiles(cfg)
        _, _, bk, warps, stages, split, fast = cfg
        RS = cdiv(R, split)
        buf_dtype = dy.dtype if split == 1 else float_acc(dy.dtype)  # one slice: in place
        # kernel-position-major, channels b innermost: a tile's stores are contiguous
        # (an NCHW gradient's b lie KP apart: a sector a value); NCHW is one copy after
        buf = torch.empty((split, w_shape[0], KP, cb), dtype=buf_dtype, device=dy.device)
        sp, sa, sk, sb = buf.stride()
        i64 = idx64 or needs_int64(buf)
        launch(
            _conv_wgrad_kernel,
            (work // (KP * groups), KP * split, groups),
            dyi, imi, buf, R, RS, split, groups, ca, cb, OP, o[1], o[2], *i, k[1], k[2],
            *s, *p, *d, sp, sa, sb, sk, *(m for v in (OP, o[1], o[2]) for m in fastdiv(v)),
            FASTDIV=fast and not i64, UPCAST=upcast, PRECISION=precision,
            ACC=tl_float_acc(dy.dtype), IDX64=i64, D3=o[0] * i[0] * k[0] > 1, BM=bm, BN=bn, BK=bk,
            num_warps=warps, num_stages=stages,
        )  # fmt: skip
        return sum_slices(buf, dy.dtype)  # timed with the kernel: its slices cost a sum

    # the split is a runtime argument: its candidates cost timings, not compiles (wide
    # tiles: operands in L2 load fewer bytes a flop, conv_igemm.split_k_candidates). The
    # pixel arithmetic by fast division (module doc) wherever it is exact: it won on every
    # layer where both were timed (ResNet-50's 3x3 layers, both layouts, H200, sessions
    # 26-27), and timing both compiled each tile twice on a cold first step
    tile_cfgs = conv_candidates(ca, cb, R, dy.dtype) + wide_tiles(dy.dtype, cb)
    tile_cfgs += tall_tiles(dy.dtype, ca)
    cands = [
        (*cfg, split, not idx64)
        for cfg in tile_cfgs
        for split in split_candidates(R, tiles(cfg)[2])
    ]
    key = ("wgrad", dy.dtype, precision, R, groups, ca, cb, *o, *i, *k, *s, *p, *d)
    gw = run(tuned("conv", key, cands, run, dy.device))
    gw = gw.reshape(w_shape[0], *w_shape[2:], cb).movedim(-1, 1)  # (w0, KP, cb) as w_shape
    return gw if channels_last else gw.contiguous()
