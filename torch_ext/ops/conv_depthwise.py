"""Depthwise convolution (groups == in_channels, one input channel per group,
out_channels = MULT * in_channels) as direct kernels: each program owns a tile
of (output positions x channels) and loops over the kernel taps, reading the
input through its strides (channels_last loads run along channels). No GEMM,
no buffers but the weight gradient's ordered float32 slices (deterministic).

  forward:  y[n, co, o]  = bias[co] + sum_k x[n, co // MULT, o*s - p + k*d] * w[co, 0, k]
  dgrad:    gx[n, c, i]  = sum_{j, k} dy[n, c*MULT + j, (i + p - k*d) / s] * w[c*MULT + j, 0, k]
  wgrad:    gw[co, 0, k] = sum_{n, o} dy[n, co, o] * x[n, co // MULT, o*s - p + k*d]

Channel counts and the batch and spatial strides reach the kernels divided by VEC
(vec_of), which multiply them back: Triton then knows runs of VEC channels start
aligned and loads them in one instruction where channels are innermost.
"""

import math
import torch
import triton
import triton.language as tl

from ._common import fastdiv, in_map, pad3, split3, suggest_memory_format, tap_rows, tl_float_acc
from ._launch import cdiv, launch
from ._tune import tuned
from ..backends import spec
from .conv_igemm import needs_int64
from .reduction import sum_slices


def padded_strides(t):
    """(N, C, *spatial) strides with the spatial ones padded to three dimensions."""
    st = list(t.stride())
    return st[:2] + pad3(st[2:], 0)


def vec_of(channels, *tensors):
    """The largest of 8, 4, 2, 1 that divides `channels` and every batch and spatial
    stride of `tensors`: the kernels take those divided by it and multiply back, so that
    Triton sees runs of channels start aligned (channels_last with 72 or 120 channels,
    which Triton's divisibility-by-16 specialisation misses, loaded 16 bytes at a time
    instead of 2; an NCHW tensor's unit spatial stride gives 1)."""
    vals = [channels] + [v for t in tensors for i, v in enumerate(padded_strides(t)) if i != 1]
    return next(v for v in (8, 4, 2, 1) if all(x % v == 0 for x in vals))


def _divided(t, vec):
    """padded_strides(t) with the batch and spatial strides divided by vec."""
    st = padded_strides(t)
    return [v if i == 1 else v // vec for i, v in enumerate(st)]


@triton.jit
def _dw_fwd_kernel(
    x, w, b, y, M, C, MULT, KP, OP, O1, O2, I0, I1, I2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2,
    xsn, xsc, xs0, xs1, xs2, wso, ws0, ws1, ws2, ysn, ysc, ys0, ys1, ys2,
    HAS_BIAS: tl.constexpr, ACC: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr,
    VEC: tl.constexpr, IDX64: tl.constexpr, D3: tl.constexpr,
):  # fmt: skip
    C = C * VEC
    xsn, xs0, xs1, xs2 = xsn * VEC, xs0 * VEC, xs1 * VEC, xs2 * VEC
    ysn, ys0, ys1, ys2 = ysn * VEC, ys0 * VEC, ys1 * VEC, ys2 * VEC
    rm = _wide(tl.program_id(0), IDX64) * BM + tl.arange(0, BM)
    co = tl.program_id(1) * BC + tl.arange(0, BC)
    m_ok = rm < M
    c_ok = co < C * MULT
    n = rm // OP
    o0, o1, o2 = split3(rm % OP, O1, O2)
    x_base = x + (n * xsn)[:, None] + _wide(co // MULT, IDX64)[None, :] * xsc
    acc = tl.zeros((BM, BC), ACC)
    for k in range(0, KP):
        k0, k1, k2 = split3(k, K1, K2)
        i0 = o0 * s0 - p0 + k0 * d0
        i1 = o1 * s1 - p1 + k1 * d1
        i2 = o2 * s2 - p2 + k2 * d2
        ok = m_ok & in_map(i0, i1, i2, I0, I1, I2, D3)
        xv = tl.load(x_base + (i0 * xs0 + i1 * xs1 + i2 * xs2)[:, None], mask=ok[:, None] & c_ok[None, :], other=0)  # fmt: skip
        wv = tl.load(w + co * wso + k0 * ws0 + k1 * ws1 + k2 * ws2, mask=c_ok, other=0)
        acc += xv.to(ACC) * wv.to(ACC)[None, :]
    if HAS_BIAS:
        acc += tl.load(b + co, mask=c_ok, other=0).to(ACC)[None, :]
    off = (n * ysn + o0 * ys0 + o1 * ys1 + o2 * ys2)[:, None] + co[None, :] * ysc
    v = acc
    if y.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(y + off, v.to(y.dtype.element_ty), mask=m_ok[:, None] & c_ok[None, :])


@triton.jit
def _dw_dgrad_kernel(
    dy, w, gx, M, C, MULT, KP, IP, I1, I2, G0, G1, G2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2,
    dsn, dsc, ds0, ds1, ds2, wso, ws0, ws1, ws2, gsn, gsc, gs0, gs1, gs2,
    ACC: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr, VEC: tl.constexpr,
    ONE_MULT: tl.constexpr, IDX64: tl.constexpr, D3: tl.constexpr,
):  # fmt: skip
    C = C * VEC
    dsn, ds0, ds1, ds2 = dsn * VEC, ds0 * VEC, ds1 * VEC, ds2 * VEC
    gsn, gs0, gs1, gs2 = gsn * VEC, gs0 * VEC, gs1 * VEC, gs2 * VEC
    rm = _wide(tl.program_id(0), IDX64) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    m_ok = rm < M
    c_ok = c < C
    n = rm // IP
    i0, i1, i2 = split3(rm % IP, I1, I2)
    acc = tl.zeros((BM, BC), ACC)
    for jk in range(0, MULT * KP):
        if ONE_MULT:  # the channel itself: its runs of channels stay contiguous
            k0, k1, k2 = split3(jk, K1, K2)
            co = _wide(c, IDX64)
        else:
            j = jk // KP
            k0, k1, k2 = split3(jk % KP, K1, K2)
            co = _wide(c * MULT + j, IDX64)
        t0 = i0 + p0 - k0 * d0
        t1 = i1 + p1 - k1 * d1
        t2 = i2 + p2 - k2 * d2
        g0 = t0 // s0
        g1 = t1 // s1
        g2 = t2 // s2
        # g = t / s for a g in [0, G): 0 <= t < G * s, divisible by s
        ok = m_ok & in_map(t0, t1, t2, G0 * s0, G1 * s1, G2 * s2, D3)
        ok &= (g0 * s0 == t0) & (g1 * s1 == t1) & (g2 * s2 == t2)
        off = (n * dsn + g0 * ds0 + g1 * ds1 + g2 * ds2)[:, None] + co[None, :] * dsc
        dv = tl.load(dy + off, mask=ok[:, None] & c_ok[None, :], other=0)
        wv = tl.load(w + co * wso + k0 * ws0 + k1 * ws1 + k2 * ws2, mask=c_ok, other=0)
        acc += dv.to(ACC) * wv.to(ACC)[None, :]
    off = (n * gsn + i0 * gs0 + i1 * gs1 + i2 * gs2)[:, None] + c[None, :] * gsc
    v = acc
    if gx.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)
    tl.store(gx + off, v.to(gx.dtype.element_ty), mask=m_ok[:, None] & c_ok[None, :])


@triton.jit
def _dw_wgrad_kernel(
    dy, x, buf, R, RS, CO, MULT, OP, O1, O2, I0, I1, I2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2,
    dsn, dsc, ds0, ds1, ds2, xsn, xsc, xs0, xs1, xs2, bsp, bsc, mP, shP, m1, sh1, m2, sh2,
    ACC: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr, VEC: tl.constexpr,
    IDX64: tl.constexpr, D3: tl.constexpr,
):  # fmt: skip
    CO = CO * VEC
    dsn, ds0, ds1, ds2 = dsn * VEC, ds0 * VEC, ds1 * VEC, ds2 * VEC
    xsn, xs0, xs1, xs2 = xsn * VEC, xs0 * VEC, xs1 * VEC, xs2 * VEC
    k = tl.program_id(0)
    co = tl.program_id(1) * BC + tl.arange(0, BC)
    split = tl.program_id(2)
    c_ok = co < CO
    k0, k1, k2 = split3(k, K1, K2)
    dy_c = dy + _wide(co, IDX64) * dsc
    x_c = x + _wide(co // MULT, IDX64) * xsc
    r_lo = _wide(split, IDX64) * RS
    acc = tl.zeros((BR, BC), ACC)
    r_hi = tl.minimum(r_lo + RS, R)
    for r_start in range(r_lo, r_hi, BR):
        r = r_start + tl.arange(0, BR)
        r_ok = r < r_hi
        n, o0, o1, o2, i0, i1, i2 = tap_rows(r, OP, O1, O2, mP, shP, m1, sh1, m2, sh2, s0, s1, s2,
                                             p0, p1, p2, k0 * d0, k1 * d1, k2 * d2, not IDX64, D3)  # fmt: skip
        ok = r_ok & in_map(i0, i1, i2, I0, I1, I2, D3)
        dv = tl.load(dy_c[None, :] + (n * dsn + o0 * ds0 + o1 * ds1 + o2 * ds2)[:, None], mask=r_ok[:, None] & c_ok[None, :], other=0)  # fmt: skip
        xv = tl.load(x_c[None, :] + (n * xsn + i0 * xs0 + i1 * xs1 + i2 * xs2)[:, None], mask=ok[:, None] & c_ok[None, :], other=0)  # fmt: skip
        acc += dv.to(ACC) * xv.to(ACC)
    v = tl.sum(acc, 0)
    if buf.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(buf + split * bsp + co * bsc + k, v.to(buf.dtype.element_ty), mask=c_ok)


@triton.jit
def _wide(v, IDX64: tl.constexpr):
    """v as int64 where an offset may pass int32 (IDX64), else as it is: 64-bit
    products and divisions cost several 32-bit instructions each. One return: Triton
    3.6 compares the types of every return statement, a static branch's included."""
    return v.to(tl.int64 if IDX64 else v.dtype)


def is_depthwise(input, weight, groups, transposed):
    return not transposed and groups > 1 and groups == input.shape[1] and weight.shape[1] == 1


def _geom(w_shape, stride, padding, dilation):
    k = pad3(w_shape[2:], 1)
    return k, pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)


def _blocks(c, channels_last):
    """(channel block, rows block) of a (rows x channels) tile; a driver may widen
    both (spec "direct_conv_blocks": channel cap, tile elements, rows cap)."""
    c_cap, tile, rows_cap = spec("direct_conv_blocks") or (64, 2048, 256)
    bc = max(16 if channels_last else 4, min(c_cap, triton.next_power_of_2(c)))
    return bc, max(16, min(tile // bc, rows_cap))


def dw_candidates(c, channels_last, wgrad=False):
    """(channel block, rows block, warps) configurations ops/_tune.py times, the
    heuristic's (_blocks) first: wider channel blocks where channels are innermost
    (channels_last), longer runs of rows where pixels are (NCHW). The weight gradient
    reads two tiles per row: its heuristic takes half the rows."""
    bc, rows = _blocks(c, channels_last)
    first = (bc, max(16, rows // 2) if wgrad else rows, 4)
    if channels_last:
        extra = [(32, 64, 4), (64, 64, 4), (16, 128, 4), (128, 32, 4), (64, 128, 8)]
    else:
        extra = [(16, 128, 4), (8, 256, 4), (4, 512, 4), (32, 64, 4), (16, 256, 8)]
    cap = max(16 if channels_last else 4, triton.next_power_of_2(c))
    return [first] + [e for e in extra if e[0] <= cap]


def _tune_key(tag, *tensors, geom=()):
    """Every value that changes a depthwise launch: sizes, strides, dtypes, geometry."""
    key = [tag]
    for t in tensors:
        key += [t.dtype, *t.shape, *t.stride()]
    return key + [v for g in geom for v in g]


def dw_forward(x, w, bias, stride, padding, dilation, out_sp):
    N, C, CO = x.shape[0], x.shape[1], w.shape[0]
    fmt = suggest_memory_format(x)
    y = torch.empty([N, CO] + list(out_sp), dtype=x.dtype, device=x.device, memory_format=fmt)
    if y.numel() == 0:
        return y
    k, s, p, d = _geom(w.shape, stride, padding, dilation)
    im, o = pad3(x.shape[2:], 1), pad3(out_sp, 1)
    OP = math.prod(o)
    M = N * OP
    ws = list(w.stride())
    vec = vec_of(C, x, y)

    def run(cfg):
        bc, bm, warps = cfg
        launch(
            _dw_fwd_kernel, (cdiv(M, bm), cdiv(CO, bc)),
            x, w, bias if bias is not None else y, y, M, C // vec, CO // C, math.prod(k), OP,
            o[1], o[2], *im, k[1], k[2], *s, *p, *d, *_divided(x, vec), ws[0], *pad3(ws[2:], 0),
            *_divided(y, vec), HAS_BIAS=bias is not None, ACC=tl_float_acc(x.dtype), BM=bm,
            BC=bc, VEC=vec, IDX64=needs_int64(x, y), D3=o[0] * im[0] * k[0] > 1, num_warps=warps,
        )  # fmt: skip

    cands = dw_candidates(CO, fmt != torch.contiguous_format)
    key = _tune_key("fwd", x, w, y, geom=(k, s, p, d, [bias is not None]))
    run(tuned("dwconv", key, cands, run, x.device))
    return y


def dw_input_grad(dy, w, stride, padding, dilation, in_shape):
    N, C = in_shape[0], in_shape[1]
    fmt = suggest_memory_format(dy)
    gx = torch.empty(list(in_shape), dtype=dy.dtype, device=dy.device, memory_format=fmt)
    if gx.numel() == 0:
        return gx
    k, s, p, d = _geom(w.shape, stride, padding, dilation)
    im, g = pad3(in_shape[2:], 1), pad3(dy.shape[2:], 1)
    IP = math.prod(im)
    M = N * IP
    ws = list(w.stride())
    mult = w.shape[0] // C
    vec = vec_of(C, dy, gx) if mult == 1 else 1

    def run(cfg):
        bc, bm, warps = cfg
        launch(
            _dw_dgrad_kernel, (cdiv(M, bm), cdiv(C, bc)),
            dy, w, gx, M, C // vec, mult, math.prod(k), IP, im[1], im[2], *g, k[1], k[2],
            *s, *p, *d, *_divided(dy, vec), ws[0], *pad3(ws[2:], 0), *_divided(gx, vec),
            ACC=tl_float_acc(dy.dtype), BM=bm, BC=bc, VEC=vec, ONE_MULT=mult == 1,
            IDX64=needs_int64(dy, gx), D3=g[0] * im[0] * k[0] > 1, num_warps=warps,
        )  # fmt: skip

    cands = dw_candidates(C, fmt != torch.contiguous_format)
    key = _tune_key("dgrad", dy, w, gx, geom=(k, s, p, d))
    run(tuned("dwconv", key, cands, run, dy.device))
    return gx


def dw_weight_grad(dy, x, w_shape, stride, padding, dilation):
    N, C, CO = x.shape[0], x.shape[1], w_shape[0]
    k, s, p, d = _geom(w_shape, stride, padding, dilation)
    im, o = pad3(x.shape[2:], 1), pad3(dy.shape[2:], 1)
    KP, OP = math.prod(k), math.prod(o)
    R = N * OP
    gw = torch.empty((CO, KP), dtype=dy.dtype, device=dy.device)
    if R == 0:
        return gw.zero_().reshape(w_shape)
    acc_dt = torch.float64 if dy.dtype == torch.float64 else torch.float32
    vec = vec_of(CO, dy, x) if CO == C else 1

    def run(cfg):
        bc, br, warps = cfg
        bufs = cdiv(CO, bc) * KP
        split = 1 if R < 8192 or bufs >= 512 else max(1, min(32, R // 4096, 512 // bufs))
        RS = cdiv(R, split)
        # one slice: written in place; more: float32 slices summed in a fixed order
        buf = (
            gw[None] if split == 1 else torch.empty((split, CO, KP), dtype=acc_dt, device=dy.device)
        )
        launch(
            _dw_wgrad_kernel, (KP, cdiv(CO, bc), split),
            dy, x, buf, R, RS, CO // vec, CO // C, OP, o[1], o[2], *im, k[1], k[2], *s, *p, *d,
            *_divided(dy, vec), *_divided(x, vec), buf.stride(0), buf.stride(1),
            *(m for v in (OP, o[1], o[2]) for m in fastdiv(v)), ACC=tl_float_acc(dy.dtype),
            BR=br, BC=bc, VEC=vec, IDX64=needs_int64(dy, x, buf), D3=o[0] * im[0] * k[0] > 1,
            num_warps=warps,
        )  # fmt: skip
        return buf

    cands = dw_candidates(CO, suggest_memory_format(x) != torch.contiguous_format, wgrad=True)
    key = _tune_key("wgrad", dy, x, geom=(k, s, p, d))
    buf = run(tuned("dwconv", key, cands, run, dy.device))
    # the slices' sum after tuning, not inside `run`: the tuner's compile-only threads
    # run it without launching the kernel, and a sum there read the unwritten slices
    # (and could be a replayed plan that launches for real)
    return sum_slices(buf, dy.dtype).reshape(w_shape)
