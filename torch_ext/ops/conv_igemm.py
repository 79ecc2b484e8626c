"""Convolution as an implicit GEMM over channels-inner operands (no column buffer).

The plain convolution's forward and its adjoint gather (`conv_scatter`: the input
gradient of a plain convolution, the forward of a transposed one) are one kernel:

  forward  out[n, o, g*CO + co] = bias + sum_{k, c} x[n, o*stride - padding + k*dilation, g*CR + c]
                                                      * W[k, g, c, co]
  scatter  out[n, i, g*CO + co] = bias + sum_{k, c} x[n, (i + padding - k*dilation) / stride, g*CR + c]
                                                      * W[k, g, c, co]   (quotient integral, in the grid)

with x and out channels-inner ((N, *spatial, C) contiguous: an NCHW tensor is copied
so first, its result copied back) and W the weight rearranged kernel position-major
(KP, G, CR, CO). The reduction runs kernel position by kernel position and, inside,
over blocks of channels: a tile of A is BM pixels x BK consecutive channels (coalesced
rows of memory), its pixel and bounds arithmetic done once per row and kernel
position, not once per element; B's rows are contiguous output channels. The earlier
kernel gathered NCHW operands element by element with 64-bit index arithmetic: 10-20x
slower than cuDNN on ResNet-50 (H200).
"""

import math
import torch
import triton
import triton.language as tl

from ._common import pad3, split3, suggest_memory_format, tl_float_acc
from ._launch import cdiv, launch, next_pow2
from ._tune import tuned
from ..backends import spec
from .conv_igemm_phase import phase_fits, phase_scatter


@triton.jit
def _igemm_kernel(
    x, wt, b, y, M, G, CR, CO, KP, OP, O1, O2, I0, I1, I2, K1, K2,
    s0, s1, s2, p0, p1, p2, d0, d1, d2,
    SCATTER: tl.constexpr, HAS_BIAS: tl.constexpr, UPCAST: tl.constexpr,
    PRECISION: tl.constexpr, ACC: tl.constexpr, IDX64: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
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
    w_grp = wt + grp * CR * CO + rn[None, :]
    blocks = tl.cdiv(CR, BK)
    acc = tl.zeros((BM, BN), ACC)
    for kk in range(0, KP * blocks):
        kpos = kk // blocks
        c = (kk % blocks) * BK + tl.arange(0, BK)
        k0, k1, k2 = split3(kpos, K1, K2)
        if SCATTER:
            t0 = o0 + p0 - k0 * d0
            t1 = o1 + p1 - k1 * d1
            t2 = o2 + p2 - k2 * d2
            i0 = t0 // s0
            i1 = t1 // s1
            i2 = t2 // s2
            ok = (t0 >= 0) & (t1 >= 0) & (t2 >= 0)
            ok &= (i0 * s0 == t0) & (i1 * s1 == t1) & (i2 * s2 == t2)
            ok &= (i0 < I0) & (i1 < I1) & (i2 < I2)
        else:
            i0 = o0 * s0 - p0 + k0 * d0
            i1 = o1 * s1 - p1 + k1 * d1
            i2 = o2 * s2 - p2 + k2 * d2
            ok = (i0 >= 0) & (i0 < I0) & (i1 >= 0) & (i1 < I1) & (i2 >= 0) & (i2 < I2)
        pix = ((img + i0) * I1 + i1) * I2 + i2
        c_ok = c < CR
        at = tl.load(
            x_grp + pix[:, None] * XC + c[None, :],
            mask=(m_ok & ok)[:, None] & c_ok[None, :],
            other=0,
        )
        bt = tl.load(
            w_grp + (kpos * XC + c[:, None]) * CO, mask=c_ok[:, None] & n_ok[None, :], other=0
        )
        if UPCAST:
            at = at.to(tl.float32)
            bt = bt.to(tl.float32)
        acc += tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)
    if HAS_BIAS:
        acc += tl.load(b + grp * CO + rn, mask=n_ok, other=0).to(ACC)[None, :]
    v = acc
    if y.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    out = y + rm[:, None] * (G * CO) + grp * CO + rn[None, :]
    tl.store(out, v.to(y.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


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


def conv_warps(bm, bn):
    return 8 if bm * bn >= 128 * 128 else 4


def conv_precision(dtype):
    """(upcast, input_precision): tf32 for float32 where cudnn.allow_tf32 says so."""
    upcast = bool(spec("dot_needs_fp32_inputs", dtype))
    if dtype in (torch.float32, torch.float64) or upcast:
        tf32 = dtype == torch.float32 and torch.backends.cudnn.allow_tf32 and not upcast
        return upcast, "tf32" if tf32 else "ieee"
    return upcast, None


def channels_inner(t):
    """t (N, C, *spatial) as a contiguous (N, *spatial, C) tensor: a view of a
    channels_last tensor, a copy of any other."""
    return t.movedim(1, -1).contiguous()


def needs_int64(*tensors):
    """Whether an element offset into one of `tensors` may pass int32."""
    return max(t.numel() for t in tensors) + (1 << 16) >= 2**31


def _result(y_inner, fmt):
    """(N, *spatial, C) back to (N, C, *spatial) in memory format `fmt`."""
    y = y_inner.movedim(-1, 1)
    return y if fmt != torch.contiguous_format else y.contiguous()


def _igemm(x, wt, bias, kernel_sp, stride, padding, dilation, groups, out_sp, fmt, scatter):
    """out (N, groups * CO, *out_sp) in memory format `fmt` from x (N, groups * CR, *grid)
    and wt (KP, groups, CR, CO) (module doc)."""
    N = x.shape[0]
    KP, _, cr, co = wt.shape
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

    def run(cfg):
        if phases and cfg[5]:
            phase_scatter(xi, wt, bias, y_inner, k, o, grid, s, p, groups, cfg[:5], upcast,
                          precision, idx64)  # fmt: skip
            return
        bm, bn, bk, warps, stages = cfg[:5]
        bk = min(bk, max(16, next_pow2(cr)))  # channels per step
        launch(
            _igemm_kernel,
            (cdiv(M, bm), cdiv(co, bn), groups),
            xi, wt, bias if bias is not None else y_inner, y_inner,
            M, groups, cr, co, KP, OP, o[1], o[2], *grid, k[1], k[2], *s, *p, *d,
            SCATTER=scatter, HAS_BIAS=bias is not None, UPCAST=upcast, PRECISION=precision,
            ACC=tl_float_acc(x.dtype), IDX64=idx64,
            BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages,
        )  # fmt: skip

    key = ("dgrad" if scatter else "fwd", x.dtype, precision, bias is not None, M, groups,
           cr, co, KP, *o, *grid, *k, *s, *p, *d)  # fmt: skip
    cands = conv_candidates(M, co, cr * KP, x.dtype)
    if phases:  # by phases (conv_igemm_phase.py) first, the full gather timed beside
        cands = [(*c, ph) for ph in (True, False) for c in cands]
    run(tuned("conv", key, cands, run, x.device))
    return _result(y_inner, fmt)


def conv_format(x, w):
    fmt = suggest_memory_format(x)
    return suggest_memory_format(w) if fmt == torch.contiguous_format else fmt


def conv_forward(x, weight, bias, stride, padding, dilation, groups, out_sp):
    """The plain convolution's forward (output in the input's memory format; as torch,
    a channels_last weight gives channels_last)."""
    cout, cig = weight.shape[0], weight.shape[1]
    cog, KP = cout // groups, math.prod(weight.shape[2:])
    # W[k, g, c, co] = weight[g*COG + co, c, k]
    wt = weight.reshape(groups, cog, cig, KP).permute(3, 0, 2, 1).contiguous()
    return _igemm(x, wt, bias, weight.shape[2:], stride, padding, dilation, groups,
                  out_sp, conv_format(x, weight), False)  # fmt: skip


def conv_scatter(src, w, bias, stride, padding, dilation, groups, im_sp, fmt=None):
    """out (N, groups * w.shape[1], *im_sp) in memory format `fmt` (default: src's): the
    adjoint gather (module doc) of src (N, groups * CR, *grid) with w (groups * CR, CO,
    *kernel)."""
    cr, co, KP = w.shape[0] // groups, w.shape[1], math.prod(w.shape[2:])
    # W[k, g, c, co] = w[g*CR + c, co, k]
    wt = w.reshape(groups, cr, co, KP).permute(3, 0, 1, 2).contiguous()
    return _igemm(src, wt, bias, w.shape[2:], stride, padding, dilation, groups,
                  im_sp, fmt or conv_format(src, w), True)  # fmt: skip
