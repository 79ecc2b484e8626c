"""The convolution's adjoint products as implicit GEMMs (no column buffers):

* `conv_scatter` (the input gradient of a plain convolution, and the forward
  of a transposed one): with src (N, g*CR, *grid) and w (g*CR, CO, *kernel),

    out[n, g*CO + co, i] = bias + sum_{c, k} src[n, g*CR + c, o] * w[g*CR + c, co, k]
        over o = (i + padding - k*dilation) / stride, integral and inside grid;

  computed as a gather over the output (deterministic, no atomics).
* `conv_weight_grad` (the weight gradient of both): with dy (N, g*CA, *grid)
  and im (N, g*CB, *im),

    gw[g*CA + a, b, k] = sum_{n, o} dy[n, g*CA + a, o] * im[n, g*CB + b, o*stride - padding + k*dilation];

  the reduction over (n, o) is split into SPLIT slices written to a float32
  buffer and summed in order (one slice: written straight into the gradient;
  deterministic with or without
  torch.are_deterministic_algorithms_enabled(); no atomics).
"""

import math
import torch
import triton
import triton.language as tl

from ._common import pad3, split3, suggest_memory_format, tl_float_acc
from ._launch import cdiv, launch
from .conv_igemm import conv_precision, conv_tiles, conv_warps, padded_strides


@triton.jit
def _conv_scatter_kernel(
    src, w, b, y, M, CO, CR, KP, IP, I1, I2, G0, G1, G2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2,
    xsn, xsc, xs0, xs1, xs2, wsr, wso, ws0, ws1, ws2, ysn, ysc, ys0, ys1, ys2,
    HAS_BIAS: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    ACC: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    grp = tl.program_id(2).to(tl.int64)
    rm = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    n = rm // IP
    i0, i1, i2 = split3(rm % IP, I1, I2)
    a_row = src + n * xsn + grp * CR * xsc
    co = grp * CO + rn
    w_col = w + rn * wso + grp * CR * wsr
    m_ok = rm < M
    n_ok = rn < CO
    KT = CR * KP
    acc = tl.zeros((BM, BN), ACC)
    for k_start in range(0, KT, BK):
        rk = k_start + tl.arange(0, BK)
        k_ok = rk < KT
        c = rk // KP
        k0, k1, k2 = split3(rk % KP, K1, K2)
        t0 = i0[:, None] + p0 - k0[None, :] * d0
        t1 = i1[:, None] + p1 - k1[None, :] * d1
        t2 = i2[:, None] + p2 - k2[None, :] * d2
        g0 = t0 // s0
        g1 = t1 // s1
        g2 = t2 // s2
        ok = m_ok[:, None] & k_ok[None, :] & (t0 >= 0) & (t1 >= 0) & (t2 >= 0)
        ok &= (g0 * s0 == t0) & (g1 * s1 == t1) & (g2 * s2 == t2)
        ok &= (g0 < G0) & (g1 < G1) & (g2 < G2)
        at = tl.load(
            a_row[:, None] + c[None, :] * xsc + g0 * xs0 + g1 * xs1 + g2 * xs2, mask=ok, other=0
        )
        w_off = c * wsr + k0 * ws0 + k1 * ws1 + k2 * ws2
        bt = tl.load(w_col[None, :] + w_off[:, None], mask=k_ok[:, None] & n_ok[None, :], other=0)
        if UPCAST:
            at = at.to(tl.float32)
            bt = bt.to(tl.float32)
        acc += tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)
    if HAS_BIAS:
        acc += tl.load(b + co, mask=n_ok, other=0).to(ACC)[None, :]
    y_off = n * ysn + i0 * ys0 + i1 * ys1 + i2 * ys2
    v = acc
    if y.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(y + y_off[:, None] + co[None, :] * ysc, v.to(y.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])  # fmt: skip


def conv_scatter(src, w, bias, stride, padding, dilation, groups, im_sp, out_dtype=None):
    """out (N, groups*w.shape[1], *im_sp) in src's memory format (see module doc)."""
    N = src.shape[0]
    cr, co = w.shape[0] // groups, w.shape[1]
    fmt = suggest_memory_format(src)
    if fmt == torch.contiguous_format:
        fmt = suggest_memory_format(w)
    y = torch.empty([N, groups * co] + list(im_sp), dtype=src.dtype, device=src.device, memory_format=fmt)  # fmt: skip
    if y.numel() == 0:
        return y
    if src.shape[1] == 0 or src[0, 0].numel() == 0:
        return y.zero_() if bias is None else y.copy_(bias.reshape([1, -1] + [1] * len(im_sp)).expand(y.shape))  # fmt: skip
    k, im, gr = pad3(w.shape[2:], 1), pad3(im_sp, 1), pad3(src.shape[2:], 1)
    s, p, d = pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)
    KP, IP = math.prod(k), math.prod(im)
    M = N * IP
    bm, bn, bk, warps, stages = conv_tiles(M, co, cr * KP, src.dtype)
    upcast, precision = conv_precision(src.dtype)
    launch(
        _conv_scatter_kernel,
        (cdiv(M, bm), cdiv(co, bn), groups),
        src, w, bias if bias is not None else y, y,
        M, co, cr, KP, IP, im[1], im[2], *gr, k[1], k[2], *s, *p, *d,
        *padded_strides(src), *padded_strides(w), *padded_strides(y),
        HAS_BIAS=bias is not None, UPCAST=upcast, PRECISION=precision,
        ACC=tl_float_acc(src.dtype), BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages,
    )  # fmt: skip
    return y


@triton.jit
def _conv_wgrad_kernel(
    dy, im, gw, R, RS, CA, CB, KP, OP, O1, O2, I0, I1, I2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2,
    dsn, dsc, ds0, ds1, ds2, xsn, xsc, xs0, xs1, xs2, wsp, wsa, wsb, wsk,
    UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    ACC: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    grp = tl.program_id(2).to(tl.int64)
    split = tl.program_id(1)
    tiles_n = tl.cdiv(CB * KP, BN)
    pid = tl.program_id(0)
    ra = (pid // tiles_n) * BM + tl.arange(0, BM)  # rows: channels a of dy
    rb = (pid % tiles_n) * BN + tl.arange(0, BN)  # cols: (b, k) of the weight
    a_ok = ra < CA
    b_ok = rb < CB * KP
    cb = rb // KP
    k0, k1, k2 = split3(rb % KP, K1, K2)
    dy_rows = dy + (grp * CA + ra.to(tl.int64)) * dsc
    im_cols = im + (grp * CB + cb.to(tl.int64)) * xsc
    acc = tl.zeros((BM, BN), ACC)
    r_lo = split.to(tl.int64) * RS
    for r_start in range(0, RS, BK):
        r = r_lo + r_start + tl.arange(0, BK)
        r_ok = (r < R) & (r < r_lo + RS)
        n = r // OP
        o0, o1, o2 = split3(r % OP, O1, O2)
        dt = tl.load(
            dy_rows[:, None] + (n * dsn + o0 * ds0 + o1 * ds1 + o2 * ds2)[None, :],
            mask=a_ok[:, None] & r_ok[None, :],
            other=0,
        )
        i0 = o0[:, None] * s0 - p0 + k0[None, :] * d0
        i1 = o1[:, None] * s1 - p1 + k1[None, :] * d1
        i2 = o2[:, None] * s2 - p2 + k2[None, :] * d2
        ok = r_ok[:, None] & b_ok[None, :] & (i0 >= 0) & (i0 < I0) & (i1 >= 0) & (i1 < I1)
        ok &= (i2 >= 0) & (i2 < I2)
        xt = tl.load(im_cols[None, :] + n[:, None] * xsn + i0 * xs0 + i1 * xs1 + i2 * xs2, mask=ok, other=0)  # fmt: skip
        if UPCAST:
            dt = dt.to(tl.float32)
            xt = xt.to(tl.float32)
        acc += tl.dot(dt, xt, input_precision=PRECISION, out_dtype=ACC)
    out = gw + split * wsp + (grp * CA + ra[:, None]) * wsa + cb[None, :] * wsb + (rb % KP)[None, :] * wsk  # fmt: skip
    v = acc
    if gw.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(out, v.to(gw.dtype.element_ty), mask=a_ok[:, None] & b_ok[None, :])


def _splits(R, work):
    """Slices of the (n, o) reduction: enough programs to fill a GPU, each long."""
    if R < 4096 or work >= 256:
        return 1
    return max(1, min(64, R // 2048, 256 // max(work, 1)))


def conv_weight_grad(dy, im, w_shape, stride, padding, dilation, groups):
    """gw of shape w_shape (g*CA, CB, *kernel) (see module doc); fp32 accumulation."""
    N = dy.shape[0]
    ca, cb = w_shape[0] // groups, w_shape[1]
    k, o, i = pad3(w_shape[2:], 1), pad3(dy.shape[2:], 1), pad3(im.shape[2:], 1)
    s, p, d = pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)
    KP, OP = math.prod(k), math.prod(o)
    R = N * OP
    bm, bn, bk, warps, stages = conv_tiles(ca, cb * KP, R, dy.dtype)
    bm, bn = min(bm, 64), min(bn, 64)
    acc = tl_float_acc(dy.dtype)
    tiles = cdiv(ca, bm) * cdiv(cb * KP, bn)
    split = _splits(R, tiles * groups)
    RS = cdiv(R, split)
    buf_dtype = torch.float64 if dy.dtype == torch.float64 else torch.float32
    buf_dtype = dy.dtype if split == 1 else buf_dtype  # one slice: written in place
    buf = torch.empty((split, w_shape[0], cb, KP), dtype=buf_dtype, device=dy.device)
    if R == 0:
        return buf.zero_().sum(0).to(dy.dtype).reshape(w_shape)
    upcast, precision = conv_precision(dy.dtype)
    launch(
        _conv_wgrad_kernel,
        (tiles, split, groups),
        dy, im, buf, R, RS, ca, cb, KP, OP, o[1], o[2], *i, k[1], k[2], *s, *p, *d,
        *padded_strides(dy), *padded_strides(im), *buf.stride(),
        UPCAST=upcast, PRECISION=precision, ACC=acc, BM=bm, BN=bn, BK=bk,
        num_warps=conv_warps(bm, bn), num_stages=stages,
    )  # fmt: skip
    gw = buf[0] if split == 1 else buf.sum(0)
    return gw.to(dy.dtype).reshape(w_shape)
