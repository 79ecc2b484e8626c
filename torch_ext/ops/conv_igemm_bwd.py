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
sizes, five divisions or remainders a row a step: a run-time divisor costs about twenty
instructions each, with the products' tiles (64 rows) as many integer instructions as
the tensor cores take cycles. FASTDIV divides by multiply and shift instead
(_common.fdiv, exact for indices below 2**31); the tuner times both (not measured yet).
"""

import math
import torch
import triton
import triton.language as tl

from ._common import fastdiv, float_acc, pad3, split3, split_rows, tl_float_acc
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
    IDX64: tl.constexpr,
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
    for r_start in range(0, RS, BK):
        r = r_lo + r_start + tl.arange(0, BK)
        r_ok = (r < R) & (r < r_lo + RS)
        n, o0, o1, o2 = split_rows(r, OP, O1, O2, mP, shP, m1, sh1, m2, sh2, FASTDIV)
        i0 = o0 * s0 - p0 + k0 * d0
        i1 = o1 * s1 - p1 + k1 * d1
        i2 = o2 * s2 - p2 + k2 * d2
        ok = r_ok & (i0 >= 0) & (i0 < I0) & (i1 >= 0) & (i1 < I1) & (i2 >= 0) & (i2 < I2)
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
    `channels_last` (as torch, for a channels_last weight): gw's channels b innermost,
    which the kernel's tiles also store contiguously (else kernel positions are)."""
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
        bm, bn = min(cfg[0], 128), min(cfg[1], 256)
        return bm, bn, cdiv(ca, bm) * cdiv(cb, bn) * groups * KP

    idx64 = needs_int64(dyi, imi) or R >= 1 << 31

    def run(cfg):
        bm, bn, work = tiles(cfg)
        _, _, bk, warps, stages, split, fast = cfg
        RS = cdiv(R, split)
        buf_dtype = dy.dtype if split == 1 else float_acc(dy.dtype)  # one slice: in place
        if channels_last:
            buf = torch.empty((split, w_shape[0], KP, cb), dtype=buf_dtype, device=dy.device)
            sp, sa, sk, sb = buf.stride()
        else:
            buf = torch.empty((split, w_shape[0], cb, KP), dtype=buf_dtype, device=dy.device)
            sp, sa, sb, sk = buf.stride()
        i64 = idx64 or needs_int64(buf)
        launch(
            _conv_wgrad_kernel,
            (work // (KP * groups), KP * split, groups),
            dyi, imi, buf, R, RS, split, groups, ca, cb, OP, o[1], o[2], *i, k[1], k[2],
            *s, *p, *d, sp, sa, sb, sk, *(m for v in (OP, o[1], o[2]) for m in fastdiv(v)),
            FASTDIV=fast and not i64, UPCAST=upcast, PRECISION=precision,
            ACC=tl_float_acc(dy.dtype), IDX64=i64, BM=bm, BN=bn, BK=bk,
            num_warps=warps, num_stages=stages,
        )  # fmt: skip
        return buf

    # the split is a runtime argument: its candidates cost timings, not compiles; the
    # pixel arithmetic by fast division (module doc) compiles each tile again
    # (wide tiles: operands in L2 load fewer bytes a flop, conv_igemm.split_k_candidates)
    tile_cfgs = conv_candidates(ca, cb, R, dy.dtype) + wide_tiles(dy.dtype, cb)
    fasts = (False,) if idx64 else (False, True)
    cands = [
        (*cfg, split, fast)
        for cfg in tile_cfgs
        for fast in fasts
        for split in split_candidates(R, tiles(cfg)[2])
    ]
    key = ("wgrad", dy.dtype, precision, R, groups, ca, cb, *o, *i, *k, *s, *p, *d)
    gw = sum_slices(run(tuned("conv", key, cands, run, dy.device)), dy.dtype)
    if channels_last:  # (w0, KP, cb) seen as (w0, cb, *kernel)
        return gw.reshape(w_shape[0], *w_shape[2:], cb).movedim(-1, 1)
    return gw.reshape(w_shape)
