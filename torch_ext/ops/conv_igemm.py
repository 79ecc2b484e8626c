"""Convolution forward as an implicit GEMM (no column buffer): for a plain
(not transposed) convolution of any groups, 1-d to 3-d,

  out[n, g*COG + co, o] = bias[co] + sum_{c, k} x[n, g*CIG + c, o*stride - padding + k*dilation]
                                                 * w[g*COG + co, c, k]

a (M = N*prod(out)) x (COG) x (K = CIG*prod(kernel)) product per group whose
A tiles are gathered from the input through its strides (NCHW or
channels_last read in place) and whose epilogue adds the bias. Every tensor
passes as pointer, sizes and strides (no host descriptors, no syncs).
"""

import math
import torch
import triton
import triton.language as tl

from ._common import pad3, split3, suggest_memory_format, tl_float_acc
from ._launch import cdiv, launch
from ..backends import spec


@triton.jit
def _conv_fwd_kernel(
    x, w, b, y, M, COG, CIG, KP, OP, O1, O2, I0, I1, I2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2,
    xsn, xsc, xs0, xs1, xs2, wso, wsc, ws0, ws1, ws2, ysn, ysc, ys0, ys1, ys2,
    HAS_BIAS: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    ACC: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    grp = tl.program_id(2).to(tl.int64)
    rm = pid_m.to(tl.int64) * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    n = rm // OP
    o0, o1, o2 = split3(rm % OP, O1, O2)
    a_row = x + n * xsn + grp * CIG * xsc
    co = grp * COG + rn
    w_col = w + co * wso
    m_ok = rm < M
    n_ok = rn < COG
    KT = CIG * KP
    acc = tl.zeros((BM, BN), ACC)
    for k_start in range(0, KT, BK):
        rk = k_start + tl.arange(0, BK)
        k_ok = rk < KT
        c = rk // KP
        k0, k1, k2 = split3(rk % KP, K1, K2)
        i0 = o0[:, None] * s0 - p0 + k0[None, :] * d0
        i1 = o1[:, None] * s1 - p1 + k1[None, :] * d1
        i2 = o2[:, None] * s2 - p2 + k2[None, :] * d2
        a_ok = (
            m_ok[:, None]
            & k_ok[None, :]
            & (i0 >= 0)
            & (i0 < I0)
            & (i1 >= 0)
            & (i1 < I1)
            & (i2 >= 0)
            & (i2 < I2)
        )
        at = tl.load(
            a_row[:, None] + c[None, :] * xsc + i0 * xs0 + i1 * xs1 + i2 * xs2, mask=a_ok, other=0
        )
        w_off = c * wsc + k0 * ws0 + k1 * ws1 + k2 * ws2
        bt = tl.load(w_col[None, :] + w_off[:, None], mask=k_ok[:, None] & n_ok[None, :], other=0)
        if UPCAST:
            at = at.to(tl.float32)
            bt = bt.to(tl.float32)
        acc += tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)
    if HAS_BIAS:
        acc += tl.load(b + co, mask=n_ok, other=0).to(ACC)[None, :]
    y_off = n * ysn + o0 * ys0 + o1 * ys1 + o2 * ys2
    out_ok = m_ok[:, None] & n_ok[None, :]
    v = acc
    if y.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(y + y_off[:, None] + co[None, :] * ysc, v.to(y.dtype.element_ty), mask=out_ok)


def conv_tiles(M, N, K, dtype):
    """(BM, BN, BK, num_warps, num_stages) by a cheap heuristic over a few tile
    shapes (no autotuning); a driver may override it with spec("conv_config")."""
    cfg = spec("conv_config", M, N, K, dtype)
    if cfg:
        return cfg
    if dtype == torch.float64:
        return (64 if M >= 64 else 16), (32 if N >= 32 else 16), 16, 4, 2
    bm = 128 if M >= 4096 else 64 if M >= 64 else 16
    bn = 128 if N >= 128 else 64 if N >= 64 else 32 if N >= 32 else 16
    half = dtype in (torch.float16, torch.bfloat16)
    bk = 64 if half and K >= 64 else 32 if K >= 32 else 16
    return bm, bn, bk, conv_warps(bm, bn), 3


def conv_warps(bm, bn):
    return 8 if bm * bn >= 128 * 128 else 4


def conv_precision(dtype):
    """(upcast, input_precision): tf32 for float32 where cudnn.allow_tf32 says so."""
    upcast = bool(spec("dot_needs_fp32_inputs", dtype))
    if dtype in (torch.float32, torch.float64) or upcast:
        tf32 = dtype == torch.float32 and torch.backends.cudnn.allow_tf32 and not upcast
        return upcast, "tf32" if tf32 else "ieee"
    return upcast, None


def padded_strides(t):
    st = list(t.stride())
    return st[:2] + pad3(st[2:], 0)


def conv_forward(x, weight, bias, stride, padding, dilation, groups, out_sp):
    """The plain convolution's forward (output in the input's memory format)."""
    N, cout = x.shape[0], weight.shape[0]
    fmt = suggest_memory_format(x)
    if fmt == torch.contiguous_format:
        fmt = suggest_memory_format(weight)  # as torch: a channels_last weight gives channels_last
    y = torch.empty([N, cout] + list(out_sp), dtype=x.dtype, device=x.device, memory_format=fmt)
    if y.numel() == 0:
        return y
    cig, cog = weight.shape[1], cout // groups
    k = pad3(weight.shape[2:], 1)
    im, o = pad3(x.shape[2:], 1), pad3(out_sp, 1)
    s, p, d = pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)
    KP, OP = math.prod(k), math.prod(o)
    M, K = N * OP, cig * KP
    bm, bn, bk, warps, stages = conv_tiles(M, cog, K, x.dtype)
    upcast, precision = conv_precision(x.dtype)
    has_bias = bias is not None
    launch(
        _conv_fwd_kernel,
        (cdiv(M, bm), cdiv(cog, bn), groups),
        x,
        weight,
        bias if has_bias else y,
        y,
        M,
        cog,
        cig,
        KP,
        OP,
        o[1],
        o[2],
        *im,
        k[1],
        k[2],
        *s,
        *p,
        *d,
        *padded_strides(x),
        *padded_strides(weight),
        *padded_strides(y),
        HAS_BIAS=has_bias,
        UPCAST=upcast,
        PRECISION=precision,
        ACC=tl_float_acc(x.dtype),
        BM=bm,
        BN=bn,
        BK=bk,
        num_warps=warps,
        num_stages=stages,
    )
    return y
