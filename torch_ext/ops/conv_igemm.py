"""Convolution as an implicit GEMM over channels-inner operands (no column buffer).

The plain convolution's forward and its adjoint gather (`conv_scatter`: the input
gradient of a plain convolution, the forward of a transposed one) are one kernel:

  forward  out[n, o, g*CO + co] = bias + sum_{k, c} x[n, o*stride - padding + k*dilation, g*CR + c]
                                                      * W[k, g, c, co]
  scatter  out[n, i, g*CO + co] = bias + sum_{k, c} x[n, (i + padding - k*dilation) / stride, g*CR + c]
                                                      * W[k, g, c, co]   (quotient integral, in the grid)

with x and out channels-inner ((N, *spatial, C) contiguous: an NCHW tensor is copied
so first, its result copied back) and W the weight read through its strides where its
channels or output channels are contiguous (channels_last, 1x1), else rearranged kernel
position-major (KP, G, CR, CO) (weight_operand). The reduction runs kernel position by
kernel position and, inside, over blocks of channels: a tile of A is BM pixels x BK
consecutive channels (coalesced rows of memory), its pixel and bounds arithmetic done
once per row and kernel position, not once per element. Where few output tiles would
leave the GPU idle, K is split across programs (split_k_candidates). The earlier
kernel gathered NCHW operands element by element with 64-bit index arithmetic: 10-20x
slower than cuDNN on ResNet-50 (H200).
"""

import math
import torch
import triton
import triton.language as tl

from ._common import float_acc, inside, pad3, split3, suggest_memory_format, tf32_allowed
from ._common import tl_float_acc
from ._launch import ARRIVALS, arrival_counters, cdiv, launch, next_pow2
from ._tune import tuned
from .matmul import split_sum
from ..backends import spec


@triton.jit
def _igemm_kernel(
    x, wt, b, y, ws, arrivals, nsplit, M, G, CR, CO, KP, OP, O1, O2, I0, I1, I2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2, wsg, wsk, wsc, wsn,
    SCATTER: tl.constexpr, HAS_BIAS: tl.constexpr, UPCAST: tl.constexpr,
    PRECISION: tl.constexpr, ACC: tl.constexpr, IDX64: tl.constexpr, D3: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    EVEN_C: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    # split-K: nsplit programs side by side per output tile, each over its own run of
    # the (kernel position, channel block) steps, merged by the last to finish. A
    # run-time value: every split count > 1 shares one compiled kernel (Triton makes
    # nsplit == 1 a constant of its own).
    pid_m = tl.program_id(0) // nsplit
    split = tl.program_id(0) % nsplit
    grp = tl.program_id(2)
    if IDX64:
        rm = pid_m.to(tl.int64) * BM + tl.arange(0, BM)
    else:
        rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m_ok = rm < M
    n_ok = rn < CO
    n = rm // OP
    o0, o1, o2 = split3(rm % OP, O1, O2)
    img = n * I0
    XC = G * CR  # channels of x, of which this group reads CR from grp * CR
    x_grp = x + grp * CR
    w_grp = wt + grp * wsg + rn[None, :] * wsn
    blocks = tl.cdiv(CR, BK)
    per = tl.cdiv(KP * blocks, nsplit)
    lo = split * per
    # the step's (kernel position, channel block), advanced by one each step (_next_step)
    kpos = lo // blocks
    cb = lo % blocks
    k0, k1, k2 = split3(kpos, K1, K2)
    acc = tl.zeros((BM, BN), ACC)
    for _ in range(lo, tl.minimum(KP * blocks, lo + per)):
        c = cb * BK + tl.arange(0, BK)
        # one unsigned comparison a bound; 1-d and 2-d maps (not D3) skip dimension 0
        i0 = 0
        if SCATTER:  # t = i * s for an i in [0, I): 0 <= t < I * s, divisible by s
            t1 = o1 + p1 - k1 * d1
            t2 = o2 + p2 - k2 * d2
            i1 = t1 // s1
            i2 = t2 // s2
            ok = inside(t1, I1 * s1) & inside(t2, I2 * s2) & (i1 * s1 == t1) & (i2 * s2 == t2)
            if D3:
                t0 = o0 + p0 - k0 * d0
                i0 = t0 // s0
                ok &= inside(t0, I0 * s0) & (i0 * s0 == t0)
        else:
            i1 = o1 * s1 - p1 + k1 * d1
            i2 = o2 * s2 - p2 + k2 * d2
            ok = inside(i1, I1) & inside(i2, I2)
            if D3:
                i0 = o0 * s0 - p0 + k0 * d0
                ok &= inside(i0, I0)
        pix = ((img + i0) * I1 + i1) * I2 + i2
        acc = _tap_step(acc, x_grp, w_grp, pix, m_ok & ok, c, kpos, CR, XC, wsk, wsc, n_ok,
                       UPCAST, PRECISION, ACC, EVEN_C, EVEN_N)  # fmt: skip
        cb, k0, k1, k2, nxt = _next_step(cb, blocks, k0, k1, k2, K1, K2)
        kpos += nxt.to(tl.int32)
    if nsplit > 1:
        tiles_m = tl.num_programs(0) // nsplit
        tile = (grp * tl.num_programs(1) + tl.program_id(1)) * tiles_m + pid_m
        tiles = tiles_m * tl.num_programs(1) * tl.num_programs(2)
        acc, last = split_sum(acc, ws, arrivals, tile, split, tiles, nsplit, BM, BN)
        if last:
            _store_rows(y, b, acc, rm, m_ok, grp, rn, n_ok, G, CO, HAS_BIAS, ACC)
    else:
        _store_rows(y, b, acc, rm, m_ok, grp, rn, n_ok, G, CO, HAS_BIAS, ACC)


@triton.jit
def _next_step(cb, blocks, j0, j1, j2, n1, n2):
    """The step after channel block `cb` (of `blocks`) of tap (j0, j1, j2) (taps in order,
    n1 x n2 a plane): (channel block, j0, j1, j2, whether the tap moved on). Counted on,
    not divided out of the step number: a run-time division costs about 25 instructions,
    five of them as many as a tile's loads."""
    cb += 1
    nxt = cb == blocks
    cb = tl.where(nxt, 0, cb)
    j2 += nxt.to(tl.int32)
    carry = j2 == n2
    j2 = tl.where(carry, 0, j2)
    j1 += carry.to(tl.int32)
    carry = j1 == n1
    j1 = tl.where(carry, 0, j1)
    j0 += carry.to(tl.int32)
    return cb, j0, j1, j2, nxt


@triton.jit
def _tap_step(acc, x_grp, w_grp, pix, ok, c, kpos, CR, XC, wsk, wsc, n_ok, UPCAST: tl.constexpr,
             PRECISION: tl.constexpr, ACC: tl.constexpr, EVEN_C: tl.constexpr = False,
             EVEN_N: tl.constexpr = False):  # fmt: skip
    """acc + (rows' pixels `pix` (where ok) x channels c of x) @ (W[kpos] channels c x
    the tile's columns; W's kernel-position and channel strides wsk, wsc from w_grp):
    one step of an implicit GEMM's reduction. EVEN_C: the channel block lies inside the
    group's channels; EVEN_N: the columns inside CO (no masks)."""
    c_ok = c < CR
    if EVEN_C:
        a_mask = ok[:, None]
        b_mask = n_ok[None, :]
    else:
        a_mask = ok[:, None] & c_ok[None, :]
        b_mask = c_ok[:, None] & n_ok[None, :]
    at = tl.load(x_grp + pix[:, None] * XC + c[None, :], mask=a_mask, other=0)
    if EVEN_N and EVEN_C:
        bt = tl.load(w_grp + kpos * wsk + c[:, None] * wsc)
    else:
        bt = tl.load(w_grp + kpos * wsk + c[:, None] * wsc, mask=b_mask, other=0)
    if UPCAST:
        at = at.to(tl.float32)
        bt = bt.to(tl.float32)
    return acc + tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)


@triton.jit
def _store_rows(y, b, acc, rows, m_ok, grp, rn, n_ok, G, CO, HAS_BIAS: tl.constexpr,
               ACC: tl.constexpr):  # fmt: skip
    """The tile (plus the group's bias) into channels-inner y at result pixels `rows`."""
    if HAS_BIAS:
        acc += tl.load(b + grp * CO + rn, mask=n_ok, other=0).to(ACC)[None, :]
    v = acc
    if y.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    out = y + rows[:, None] * (G * CO) + grp * CO + rn[None, :]
    tl.store(out, v.to(y.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


# -- the strided adjoint gather by phases ----------------------------------------
# The adjoint gather of a strided convolution (the input gradient of a plain
# convolution, the forward of a transposed one) by phases, for dilation 1.
#
# _igemm_kernel's gather gives each result pixel o every kernel tap k and keeps those
# where (o + padding - k) divides by the stride: at stride 2 a 3x3 kernel's taps are valid
# for 2.25 of 9 on average, so three quarters of the products multiply zeros, and each
# row divides by the stride at every step. Here the result pixels are grouped by their
# residue r = o mod stride (per dim): pixel o = r + stride * q receives exactly the taps
# k = k0 + stride * j, k0 = (r + padding) mod stride, from the source pixel
# i = q + (r + padding - k0) / stride - j. A program owns one residue class's rows, so the
# taps it runs and the offsets of their source pixels are the same for all its rows: no
# zero products, no division in the loop. Rows are (image, q) over ceil(size / stride) per
# dim, those past the image masked.


@triton.jit
def _phase_kernel(
    x, wt, b, y, N, G, CR, CO, I0, I1, I2, O0, O1, O2, Q0, Q1, Q2, K0, K1, K2,
    s0, s1, s2, p0, p1, p2, TILES, wsg, wsk, wsc, wsn,
    HAS_BIAS: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    ACC: tl.constexpr, IDX64: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
    BK: tl.constexpr, EVEN_C: tl.constexpr, EVEN_N: tl.constexpr,
):  # fmt: skip
    cls = tl.program_id(0) // TILES  # the residue class (r0, r1, r2)
    tile = tl.program_id(0) % TILES
    grp = tl.program_id(2)
    r0, r1, r2 = split3(cls, s1, s2)
    # this class's taps, k = k0 + s * j for j < nk per dim, and its source offsets
    k00 = (r0 + p0) % s0
    k01 = (r1 + p1) % s1
    k02 = (r2 + p2) % s2
    nk0 = tl.maximum(tl.cdiv(K0 - k00, s0), 0)
    nk1 = tl.maximum(tl.cdiv(K1 - k01, s1), 0)
    nk2 = tl.maximum(tl.cdiv(K2 - k02, s2), 0)
    base0 = (r0 + p0 - k00) // s0
    base1 = (r1 + p1 - k01) // s1
    base2 = (r2 + p2 - k02) // s2
    if IDX64:
        rm = tile.to(tl.int64) * BM + tl.arange(0, BM)
    else:
        rm = tile * BM + tl.arange(0, BM)
    QP = Q0 * Q1 * Q2
    n = rm // QP
    q0, q1, q2 = split3(rm % QP, Q1, Q2)
    o0 = r0 + s0 * q0
    o1 = r1 + s1 * q1
    o2 = r2 + s2 * q2
    m_ok = (n < N) & (o0 < O0) & (o1 < O1) & (o2 < O2)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    n_ok = rn < CO
    XC = G * CR  # channels of x, of which this group reads CR from grp * CR
    x_grp = x + grp * CR
    w_grp = wt + grp * wsg + rn[None, :] * wsn
    img = n * I0
    blocks = tl.cdiv(CR, BK)
    acc = tl.zeros((BM, BN), ACC)
    cb = 0  # the step's channel block and tap (j0, j1, j2), counted on as in _igemm_kernel
    j0 = 0
    j1 = 0
    j2 = 0
    for _ in range(0, nk0 * nk1 * nk2 * blocks):
        c = cb * BK + tl.arange(0, BK)
        kpos = ((k00 + s0 * j0) * K1 + k01 + s1 * j1) * K2 + k02 + s2 * j2
        i0 = q0 + (base0 - j0)
        i1 = q1 + (base1 - j1)
        i2 = q2 + (base2 - j2)
        ok = m_ok & inside(i0, I0) & inside(i1, I1) & inside(i2, I2)
        pix = ((img + i0) * I1 + i1) * I2 + i2
        acc = _tap_step(acc, x_grp, w_grp, pix, ok, c, kpos, CR, XC, wsk, wsc, n_ok, UPCAST,
                       PRECISION, ACC, EVEN_C, EVEN_N)  # fmt: skip
        cb, j0, j1, j2, _ = _next_step(cb, blocks, j0, j1, j2, nk1, nk2)
    m = ((n * O0 + o0) * O1 + o1) * O2 + o2
    _store_rows(y, b, acc, m, m_ok, grp, rn, n_ok, G, CO, HAS_BIAS, ACC)


def phase_fits(stride, dilation):
    """Whether the strided adjoint gather runs by phases: a stride > 1, dilation 1."""
    return any(s > 1 for s in stride) and all(d == 1 for d in dilation)


def phase_scatter(xi, wop, bias, y_inner, k, o, grid, s, p, groups, cfg, upcast, precision,
                  idx64):  # fmt: skip
    """y_inner (N, *o, groups * CO) from xi (N, *grid, groups * CR) channels-inner and
    the weight operand `wop` (weight_operand); k, o, grid, s, p padded to 3 dims
    (conv_igemm._igemm)."""
    N = xi.shape[0]
    wt, _, cr, co, wstrides = wop
    bm, bn, bk, warps, stages = cfg
    bk = min(bk, max(16, next_pow2(cr)))  # channels per step
    q = [cdiv(o[d], s[d]) for d in range(3)]
    tiles = cdiv(N * q[0] * q[1] * q[2], bm)
    launch(
        _phase_kernel, (s[0] * s[1] * s[2] * tiles, cdiv(co, bn), groups),
        xi, wt, bias if bias is not None else y_inner, y_inner,
        N, groups, cr, co, *grid, *o, *q, *k, *s, *p, tiles, *wstrides,
        HAS_BIAS=bias is not None, UPCAST=upcast, PRECISION=precision,
        ACC=tl_float_acc(xi.dtype), IDX64=idx64, BM=bm, BN=bn, BK=bk,
        EVEN_C=cr % bk == 0, EVEN_N=co % bn == 0, num_warps=warps, num_stages=stages,
    )  # fmt: skip


def conv_tiles(M, N, K, dtype):
    """(BM, BN, BK, num_warps, num_stages) by a cheap heuristic over a few tile
    shapes; a driver may override it with spec("conv_config")."""
    cfg = spec("conv_config", M, N, K, dtype)
    if cfg:
        return cfg
    if dtype == torch.float64:
        return (64 if M >= 64 else 16), (32 if N >= 32 else 16), 16, 4, 2
    bm = 128 if M >= 4096 else 64 if M >= 64 else 16
    bn = 128 if N >= 128 else 64 if N >= 64 else 32 if N >= 32 else 16
    bk = _conv_bk(K, dtype)
    return bm, bn, bk, conv_warps(bm, bn), 3


def _conv_bk(K, dtype):
    half = dtype in (torch.float16, torch.bfloat16)
    return 64 if half and K >= 64 else 32 if K >= 32 else 16


def conv_candidates(M, N, K, dtype):
    """The configurations ops/_tune.py times for an (M x K) @ (K x N) implicit GEMM:
    the heuristic's first, then the 64/128 tile shapes that fit the problem (a
    driver may give its own list with spec("conv_candidates")); float64 is not tuned."""
    first = conv_tiles(M, N, K, dtype)
    if dtype == torch.float64:
        return [first]
    extra = spec("conv_candidates", M, N, K, dtype)
    if extra is None:
        bk = _conv_bk(K, dtype)
        shapes = [
            (bm, bn)
            for bm, bn in ((128, 128), (128, 64), (64, 128), (64, 64))
            if bm <= max(64, next_pow2(M)) and bn <= max(64, next_pow2(N))
        ]
        extra = [
            (bm, bn, bk, conv_warps(bm, bn), 3 if bm * bn >= 128 * 128 else 4) for bm, bn in shapes
        ]
        if K <= 2 * bk:  # one or two steps of the reduction (1x1 layers): buffers for
            # stages the loop never fills only cost blocks per multiprocessor
            extra += [(bm, bn, bk, conv_warps(bm, bn), 1) for bm, bn in shapes]
    return [first, *extra]


def split_k_candidates(cands, M, N, groups, K, dtype):
    """`cands` (BM, BN, BK, warps, stages) with K whole (split 1), then the first three
    and the wide tile (wide_tiles) with K split where their output tiles would leave most
    multiprocessors idle (the driver's rule for matrix products, `mm_split_k_candidates`). ResNet-50's deep 3x3 layers at batch 32
    (512 -> 512 at 7x7: 1568 x 512 over K = 4608) fill 52 tiles of 128 x 128 (H200: 132
    multiprocessors); their operands sit in L2, whose bandwidth small tiles run out of
    (64 x 128: 43 flops a byte loaded; 128 x 256: 85)."""
    heads = [*cands[:3], *wide_tiles(dtype, N)]
    out = [(*c, 1) for c in dict.fromkeys([*cands, *heads])]
    for c in heads:
        tiles = cdiv(M, c[0]) * cdiv(N, c[1]) * groups
        if tiles <= ARRIVALS:
            out += [(*c, s) for s in spec("mm_split_k_candidates", tiles, K) or ()]
    return out


# A wide tile for 16-bit products with 256 or more columns (wide_tiles).
WIDE = (128, 256, 64, 8, 3)


def wide_tiles(dtype, columns):
    """[WIDE] where the implicit GEMMs also time it (16-bit operands, 256 or more
    columns: the forward's and input gradient's, or the weight gradient's), else []."""
    return [WIDE] if dtype in (torch.float16, torch.bfloat16) and columns >= 256 else []


def conv_warps(bm, bn):
    return 8 if bm * bn >= 128 * 128 else 4


def conv_precision(dtype):
    """(upcast, input_precision): tf32 for float32 where PyTorch's TF32 setting for
    cuDNN's convolutions says so (torch.backends.cudnn.conv.fp32_precision, or the legacy
    cudnn.allow_tf32; _common.tf32_allowed)."""
    upcast = bool(spec("dot_needs_fp32_inputs", dtype))
    if dtype in (torch.float32, torch.float64) or upcast:
        tf32 = dtype == torch.float32 and tf32_allowed("conv") and not upcast
        return upcast, "tf32" if tf32 else "ieee"
    return upcast, None


def channels_inner(t):
    """t (N, C, *spatial) as a contiguous (N, *spatial, C) tensor: a view of a
    channels_last tensor, a copy of any other."""
    return t.movedim(1, -1).contiguous()


def channels_last_view(t):
    """t (N, C, *spatial) with its channels innermost in memory, seen as (N, C, ...): a
    view of a channels_last tensor, a copy of any other."""
    return channels_inner(t).movedim(-1, 1)


def needs_int64(*tensors):
    """Whether an element offset into one of `tensors` may pass int32."""
    return max(t.numel() for t in tensors) + (1 << 16) >= 2**31


def _result(y_inner, fmt):
    """(N, *spatial, C) back to (N, C, *spatial) in memory format `fmt`."""
    y = y_inner.movedim(-1, 1)
    return y if fmt != torch.contiguous_format else y.contiguous()


def weight_operand(w, groups, out_first):
    """(tensor, KP, CR, CO, (group, kernel position, channel, column strides)) of the
    implicit GEMM's W[k, g, c, co]: w[g*CO + co, c, k] (`out_first`: a forward's weight)
    or w[g*CR + c, co, k] (the adjoint gather's). Read in place where its kernel
    positions flatten to one stride and its channels or columns are contiguous (a
    channels_last weight, or 1x1); otherwise copied to (KP, groups, CR, CO) contiguous
    (an NCHW 3x3 weight: every 16-bit element of a tile would be a load of its own)."""
    d0, d1, KP = w.shape[0] // groups, w.shape[1], math.prod(w.shape[2:])
    cr, co = (d1, d0) if out_first else (d0, d1)
    spatial = [i for i in range(2, w.dim()) if w.shape[i] > 1]
    sk = w.stride(spatial[-1]) if spatial else 0
    flat = all(w.stride(i) == sk * math.prod(w.shape[i + 1 :]) for i in spatial)
    if flat and any(w.stride(i) == 1 and w.shape[i] > 1 for i in (0, 1)):
        s0, s1 = w.stride(0), w.stride(1)
        sc, sn = (s1, s0) if out_first else (s0, s1)
        return w, KP, cr, co, (d0 * s0, sk, sc, sn)
    perm = (3, 0, 2, 1) if out_first else (3, 0, 1, 2)
    wt = w.reshape(groups, d0, d1, KP).permute(*perm).contiguous()
    return wt, KP, cr, co, (cr * co, groups * cr * co, co, 1)


def _igemm(x, wop, bias, kernel_sp, stride, padding, dilation, groups, out_sp, fmt, scatter):
    """out (N, groups * CO, *out_sp) in memory format `fmt` from x (N, groups * CR, *grid)
    and the weight operand `wop` (weight_operand; module doc)."""
    N = x.shape[0]
    wt, KP, cr, co, wstrides = wop
    y_inner = torch.empty([N] + list(out_sp) + [groups * co], dtype=x.dtype, device=x.device)
    if y_inner.numel() == 0:
        return _result(y_inner, fmt)
    xi = channels_inner(x)
    k, o, grid = pad3(kernel_sp, 1), pad3(out_sp, 1), pad3(x.shape[2:], 1)
    s, p, d = pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)
    OP = math.prod(o)
    M = N * OP
    upcast, precision = conv_precision(x.dtype)
    idx64 = needs_int64(xi, y_inner, wt)

    phases = scatter and phase_fits(s, d)

    def run(cfg):  # (BM, BN, BK, warps, stages, split of K[, by phases])
        if phases and cfg[6]:
            phase_scatter(xi, wop, bias, y_inner, k, o, grid, s, p, groups, cfg[:5], upcast,
                          precision, idx64)  # fmt: skip
            return
        bm, bn, bk, warps, stages, split = cfg[:6]
        bk = min(bk, max(16, next_pow2(cr)))  # channels per step
        tiles_m = cdiv(M, bm)
        tiles = tiles_m * cdiv(co, bn) * groups
        ws = arrivals = y_inner
        if split > 1:
            ws = torch.empty(split * tiles * bm * bn, dtype=float_acc(x.dtype), device=x.device)
            arrivals = arrival_counters("split_k", x.device)
        launch(
            _igemm_kernel,
            (tiles_m * split, cdiv(co, bn), groups),
            xi, wt, bias if bias is not None else y_inner, y_inner, ws, arrivals, split,
            M, groups, cr, co, KP, OP, o[1], o[2], *grid, k[1], k[2], *s, *p, *d, *wstrides,
            SCATTER=scatter, HAS_BIAS=bias is not None, UPCAST=upcast, PRECISION=precision,
            ACC=tl_float_acc(x.dtype), IDX64=idx64, D3=o[0] * grid[0] * k[0] > 1,
            BM=bm, BN=bn, BK=bk, EVEN_C=cr % bk == 0, EVEN_N=co % bn == 0,
            num_warps=warps, num_stages=stages,
        )  # fmt: skip

    key = ("dgrad" if scatter else "fwd", x.dtype, precision, bias is not None, M, groups,
           cr, co, KP, *o, *grid, *k, *s, *p, *d)  # fmt: skip
    cands = conv_candidates(M, co, cr * KP, x.dtype)
    cands = split_k_candidates(cands, M, co, groups, cr * KP, x.dtype)
    if phases:  # by phases (phase_scatter, K whole) first, the full gather timed beside
        cands = [(*c, True) for c in cands if c[5] == 1] + [(*c, False) for c in cands]
    run(tuned("conv", key, cands, run, x.device))
    return _result(y_inner, fmt)


def conv_format(x, w):
    fmt = suggest_memory_format(x)
    return suggest_memory_format(w) if fmt == torch.contiguous_format else fmt


def conv_forward(x, weight, bias, stride, padding, dilation, groups, out_sp):
    """The plain convolution's forward (output in the input's memory format; as torch,
    a channels_last weight gives channels_last)."""
    wop = weight_operand(weight, groups, True)  # W[k, g, c, co] = weight[g*COG + co, c, k]
    return _igemm(x, wop, bias, weight.shape[2:], stride, padding, dilation, groups,
                  out_sp, conv_format(x, weight), False)  # fmt: skip


def conv_scatter(src, w, bias, stride, padding, dilation, groups, im_sp, fmt=None):
    """out (N, groups * w.shape[1], *im_sp) in memory format `fmt` (default: src's): the
    adjoint gather (module doc) of src (N, groups * CR, *grid) with w (groups * CR, CO,
    *kernel)."""
    wop = weight_operand(w, groups, False)  # W[k, g, c, co] = w[g*CR + c, co, k]
    return _igemm(src, wop, bias, w.shape[2:], stride, padding, dilation, groups,
                  im_sp, fmt or conv_format(src, w), True)  # fmt: skip
