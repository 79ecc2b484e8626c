"""Convolutions over few input channels (the 3-channel stem of image models): the
forward and the weight gradient as implicit GEMMs whose reduction runs over the last
kernel dimension and the channels together.

In a channels-inner (N, *spatial, C) tensor the K2 taps of the last kernel dimension
and the C channels under them are one contiguous run of J = K2*C elements (dilation 1
along that dimension): x[n, i0, i1, o2*s2 - p2 + k2, c] sits at the pixel of
(i0, i1, o2*s2 - p2) plus j = k2*C + c. conv_igemm.py's kernels reduce kernel position
by kernel position over blocks of at least 16 channels: with C = 3 a 7x7 stem took 49
steps whose products were 3/16 useful, and its weight gradient a 16-column tile of 3.
Here a step covers a whole (k0, k1) row of J = 21 taps (a 32-wide tile: 21/32 useful),
read as runs of consecutive elements; 7 steps for the forward of a 7x7 stem.

  forward  y[n, o, co] = bias[co] + sum_{k0, k1, j} x[n, o*s - p + (k0, k1, 0), j] * W[k0, k1, j, co]
  wgrad    gw[co, c, k0, k1, k2] = sum_{n, o} dy[n, o, co] * x[n, o*s - p + (k0, k1, k2), c]

(one group; W is the weight rearranged (K0, K1, K2, C, CO), so (k2, c) is j). The
weight gradient's reduction over (n, o) is split into SPLIT slices summed in order, as
in conv_igemm_bwd.py (deterministic, no atomics).
"""

import math

import torch
import triton
import triton.language as tl

from ._common import fastdiv, float_acc, inside, pad3, split3, tap_rows, tl_float_acc
from ._launch import cdiv, launch, next_pow2
from ._tune import tuned
from .conv_igemm import channels_inner, conv_precision, needs_int64
from .reduction import sum_slices

# The longest run of (tap, channel) a step takes; above it conv_igemm.py's kernels,
# whose channel blocks are then mostly full, are the better fit.
MAX_RUN = 64


def flat_fits(channels, kernel_sp, dilation, groups):
    """Whether a convolution whose reduction reads `channels` channels per group takes
    these kernels: one group, few channels, dilation 1 along the last dimension."""
    return (
        groups == 1
        and channels < 16
        and list(dilation)[-1] == 1
        and channels * list(kernel_sp)[-1] <= MAX_RUN
    )


@triton.jit
def _rows(rm, OP, O1, O2, I0, I1, I2, s0, s1, s2, p0, p1, p2, IDX64: tl.constexpr):
    """Per output pixel rm: the input pixel of its last-dimension tap 0 (may lie in the
    padding) and its first two coordinates, with their bounds."""
    n = rm // OP
    o0, o1, o2 = split3(rm % OP, O1, O2)
    i0 = o0 * s0 - p0
    i1 = o1 * s1 - p1
    i2 = o2 * s2 - p2
    if IDX64:
        n = n.to(tl.int64)
    return n, i0, i1, i2


@triton.jit
def _flat_fwd_kernel(
    x, wt, b, y, M, C, CO, J, K0, K1, OP, O1, O2, I0, I1, I2,
    s0, s1, s2, p0, p1, p2, d0, d1,
    HAS_BIAS: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    ACC: tl.constexpr, IDX64: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    if IDX64:
        rm = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)
    else:
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m_ok = rm < M
    n_ok = rn < CO
    n, i0b, i1b, i2 = _rows(rm, OP, O1, O2, I0, I1, I2, s0, s1, s2, p0, p1, p2, IDX64)
    acc = tl.zeros((BM, BN), ACC)
    j = tl.arange(0, BK)  # the whole run of (tap, channel) in one step: BK >= J
    t0 = j // C  # the tap of each column
    j_ok = j < J
    for kq in range(0, K0 * K1):
        k0 = kq // K1
        k1 = kq % K1
        i0 = i0b + k0 * d0
        i1 = i1b + k1 * d1
        row_ok = m_ok & (i0 >= 0) & (i0 < I0) & (i1 >= 0) & (i1 < I1)
        base = (((n * I0 + i0) * I1 + i1) * I2 + i2) * C
        t = i2[:, None] + t0[None, :]  # the tap's coordinate in the last dimension
        ok = row_ok[:, None] & j_ok[None, :] & (t >= 0) & (t < I2)
        at = tl.load(x + base[:, None] + j[None, :], mask=ok, other=0)
        bt = tl.load(
            wt + (kq * J + j[:, None]) * CO + rn[None, :],
            mask=j_ok[:, None] & n_ok[None, :],
            other=0,
        )
        if UPCAST:
            at = at.to(tl.float32)
            bt = bt.to(tl.float32)
        acc += tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)
    if HAS_BIAS:
        acc += tl.load(b + rn, mask=n_ok, other=0).to(ACC)[None, :]
    v = acc
    if y.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(
        y + rm[:, None] * CO + rn[None, :],
        v.to(y.dtype.element_ty),
        mask=m_ok[:, None] & n_ok[None, :],
    )


@triton.jit
def _flat_wgrad_kernel(
    dy, x, gw, R, RS, SPLIT, C, CO, K1, K2, OP, O1, O2, I0, I1, I2,
    s0, s1, s2, p0, p1, p2, d0, d1, wsp, wsa, wsb, wsk, mP, shP, m1, sh1, m2, sh2,
    CP: tl.constexpr, J: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr, ACC: tl.constexpr,
    IDX64: tl.constexpr, D3: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    """x has CP >= C channels a pixel (the padding zeros): a run of J = K2 * CP starts at
    a multiple of CP elements, so with CP = 4 its loads are 8-byte vectors (cp.async,
    pipelined) where 3 channels took element loads the loop waited on (CP and J are
    constants for the compiler's alignment analysis)."""
    kq = tl.program_id(1) // SPLIT
    split = tl.program_id(1) % SPLIT
    k0 = kq // K1
    k1 = kq % K1
    ra = tl.program_id(0) * BM + tl.arange(0, BM)  # output channels (dy's)
    j = tl.arange(0, BN)  # (tap, channel) of x's run
    tap = j // CP
    a_ok = ra < CO
    j_ok = j < J
    acc = tl.zeros((BM, BN), ACC)
    if IDX64:
        r_lo = split.to(tl.int64) * RS
    else:
        r_lo = split * RS
    r_hi = tl.minimum(r_lo + RS, R)
    for r_start in range(r_lo, r_hi, BK):
        r = r_start + tl.arange(0, BK)
        r_ok = r < r_hi
        n, _, _, _, i0, i1, i2 = tap_rows(r, OP, O1, O2, mP, shP, m1, sh1, m2, sh2, s0, s1, s2,
                                          p0, p1, p2, k0 * d0, k1 * d1, 0, not IDX64, D3)  # fmt: skip
        row_ok = r_ok & inside(i1, I1)  # the last dimension's taps: below
        if D3:
            row_ok &= inside(i0, I0)
        base = (((n * I0 + i0) * I1 + i1) * I2 + i2) * CP
        ok = row_ok[:, None] & j_ok[None, :] & inside(i2[:, None] + tap[None, :], I2)
        dt = tl.load(
            dy + r[None, :] * CO + ra[:, None], mask=a_ok[:, None] & r_ok[None, :], other=0
        )
        xt = tl.load(x + base[:, None] + j[None, :], mask=ok, other=0)
        if UPCAST:
            dt = dt.to(tl.float32)
            xt = xt.to(tl.float32)
        acc += tl.dot(dt, xt, input_precision=PRECISION, out_dtype=ACC)
    c = j % CP
    out = gw + split * wsp + ra[:, None] * wsa + c[None, :] * wsb + (kq * K2 + tap)[None, :] * wsk
    v = acc
    if gw.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(out, v.to(gw.dtype.element_ty), mask=a_ok[:, None] & (j_ok & (c < C))[None, :])


def _geometry(x_sp, out_sp, kernel_sp, stride, padding, dilation):
    k, o, i = pad3(kernel_sp, 1), pad3(out_sp, 1), pad3(x_sp, 1)
    s, p, d = pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)
    return k, o, i, s, p, d


def _fwd_candidates(M, CO, J):
    bk = max(16, next_pow2(J))  # a whole run per step (at most MAX_RUN)
    bn = 128 if CO >= 128 else 64 if CO >= 64 else max(16, next_pow2(CO))
    # 128-pixel tiles with 8 warps: 152 registers a thread for sm_90 (bf16, 64 output
    # channels), where 4 warps took 255
    first = (128, bn, bk, 8, 3) if M >= 4096 else (64, bn, bk, 4, 3)
    return [first, (64, bn, bk, 4, 3), (64, bn, bk, 4, 4), (128, bn, bk, 8, 2)]


def flat_forward(x, weight, bias, stride, padding, dilation, out_sp, fmt):
    """y (N, CO, *out_sp) in memory format `fmt` (module doc); one group."""
    N, C = x.shape[0], x.shape[1]
    CO = weight.shape[0]
    k, o, i, s, p, d = _geometry(x.shape[2:], out_sp, weight.shape[2:], stride, padding, dilation)
    J = k[2] * C
    # W[k0, k1, (k2, c), co] = weight[co, c, k0, k1, k2]
    wt = weight.reshape(CO, C, k[0], k[1], k[2]).permute(2, 3, 4, 1, 0).contiguous()
    y_inner = torch.empty([N] + list(out_sp) + [CO], dtype=x.dtype, device=x.device)
    if y_inner.numel() == 0:
        return _result(y_inner, fmt)
    xi = channels_inner(x)
    OP = math.prod(o)
    M = N * OP
    upcast, precision = conv_precision(x.dtype)
    idx64 = needs_int64(xi, y_inner, wt)

    def run(cfg):
        bm, bn, bk, warps, stages = cfg
        launch(
            _flat_fwd_kernel,
            (cdiv(M, bm), cdiv(CO, bn)),
            xi, wt, bias if bias is not None else y_inner, y_inner,
            M, C, CO, J, k[0], k[1], OP, o[1], o[2], *i, *s, *p, d[0], d[1],
            HAS_BIAS=bias is not None, UPCAST=upcast, PRECISION=precision,
            ACC=tl_float_acc(x.dtype), IDX64=idx64,
            BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages,
        )  # fmt: skip

    key = ("flat_fwd", x.dtype, precision, bias is not None, M, C, CO, *o, *i, *k, *s, *p, *d)
    run(tuned("conv", key, _fwd_candidates(M, CO, J), run, x.device))
    return _result(y_inner, fmt)


def _result(y_inner, fmt):
    y = y_inner.movedim(-1, 1)
    return y if fmt != torch.contiguous_format else y.contiguous()


def _splits(R, programs):
    """Slices of the (n, o) reduction: about four programs per multiprocessor of a
    large GPU, each a long run of pixels."""
    if R < 4096:
        return 1
    return max(1, min(128, R // 2048, cdiv(512, max(programs, 1))))


def padded_channels(C, K2):
    """Channels a pixel of the weight gradient's copy of x: C rounded up to a multiple
    of 4 (8-byte runs of 16-bit elements) where the run still fits MAX_RUN, else C."""
    cp = -(-C // 4) * 4
    return cp if cp * K2 <= MAX_RUN else C


def flat_weight_grad(dy, x, w_shape, stride, padding, dilation):
    """gw of shape w_shape (CO, C, *kernel) (module doc); float32 accumulation."""
    N, C = x.shape[0], x.shape[1]
    CO = w_shape[0]
    k, o, i, s, p, d = _geometry(x.shape[2:], dy.shape[2:], w_shape[2:], stride, padding, dilation)
    KP, OP = math.prod(k), math.prod(o)
    R = N * OP
    if R == 0:
        return torch.zeros(w_shape, dtype=dy.dtype, device=dy.device)
    CP = padded_channels(C, k[2])
    J = k[2] * CP
    dyi = channels_inner(dy)
    xi = channels_inner(x)
    if CP != C:  # zeros in the padding channels, one launch (constant_pad_nd)
        xi = torch.nn.functional.pad(xi, (0, CP - C))
    upcast, precision = conv_precision(dy.dtype)
    bn = max(16, next_pow2(J))

    def run(cfg):
        bm, bk, warps, stages = cfg
        tiles = cdiv(CO, bm)
        split = _splits(R, tiles * k[0] * k[1])
        RS = cdiv(R, split)
        buf_dtype = dy.dtype if split == 1 else float_acc(dy.dtype)  # one slice: in place
        buf = torch.empty((split, CO, C, KP), dtype=buf_dtype, device=dy.device)
        launch(
            _flat_wgrad_kernel,
            (tiles, k[0] * k[1] * split),
            dyi, xi, buf, R, RS, split, C, CO, k[1], k[2], OP, o[1], o[2], *i,
            *s, *p, d[0], d[1], *buf.stride(), *(m for v in (OP, o[1], o[2]) for m in fastdiv(v)),
            CP=CP, J=J, UPCAST=upcast, PRECISION=precision, ACC=tl_float_acc(dy.dtype),
            IDX64=needs_int64(dyi, xi, buf), D3=o[0] * i[0] * k[0] > 1, BM=bm, BN=bn, BK=bk,
            num_warps=warps, num_stages=stages,
        )  # fmt: skip
        return sum_slices(buf, dy.dtype)  # timed with the kernel

    bm = 128 if CO >= 128 else 64 if CO >= 64 else max(16, next_pow2(CO))
    candidates = [(bm, 64, 4, 3), (bm, 64, 4, 2), (bm, 128, 8, 3), (bm, 32, 4, 4)]
    key = ("flat_wgrad", dy.dtype, precision, R, C, CO, *o, *i, *k, *s, *p, *d)
    return run(tuned("conv", key, candidates, run, dy.device)).reshape(w_shape)
