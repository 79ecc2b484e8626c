"""Normalization: layer norm, RMS norm (batch norm: batch_norm.py, group norm:
group_norm.py)."""

import math
import torch
import triton
import triton.language as tl

from ._common import float_acc, tl_float_acc
from ._launch import cdiv, launch
from ._common import contiguous
from ..backends import spec
from ._launch import next_pow2, pow2_at_most
from ._rows import row_tile, warps_for
from ._symbolic import empty, sizes
from ._declare import kernel
from ._common import scalar_name, stat_dtype

# The backward's row kernel keeps dy, x, the weight and the two partial sums row-long,
# counted as two arrays: at the cuda cap (8Ki-wide rows, 16 warps) it compiles for sm_90
# to 128 registers a thread, the most 512 threads may have, without spills.
BWD_ARRAYS = 2


@triton.jit
def _norm_fwd_tile_kernel(
    x,
    w,
    b,
    y,
    mean_out,
    rstd_out,
    M,
    D,
    eps,
    HAS_W: tl.constexpr,
    HAS_B: tl.constexpr,
    RMS: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Rows of one tile (D <= BLOCK_N): x read once, its statistics from the registers
    # (the variance as the mean of squared deviations: no cancellation).
    row = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = row < M
    c = tl.arange(0, BLOCK_N)
    cmask = c < D
    m = rmask[:, None] & cmask[None, :]
    offs = row[:, None] * D + c[None, :]
    v = tl.load(x + offs, mask=m, other=0).to(ACC)
    if RMS:
        d = v
    else:
        mean = tl.sum(v, 1) / D
        tl.store(mean_out + row, mean.to(mean_out.dtype.element_ty), mask=rmask)
        d = tl.where(m, v - mean[:, None], 0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, 1) / D + eps)
    tl.store(rstd_out + row, rstd.to(rstd_out.dtype.element_ty), mask=rmask)
    out = d * rstd[:, None]
    if HAS_W:
        out = out * tl.load(w + c, mask=cmask, other=0).to(ACC)[None, :]
    if HAS_B:
        out = out + tl.load(b + c, mask=cmask, other=0).to(ACC)[None, :]
    tl.store(y + offs, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def _norm_fwd_kernel(
    x,
    w,
    b,
    y,
    mean_out,
    rstd_out,
    M,
    D,
    eps,
    HAS_W: tl.constexpr,
    HAS_B: tl.constexpr,
    RMS: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Rows longer than a tile: x read twice, for the statistics and to normalise. Layer
    # norm merges each tile's mean and sum of squared deviations into the running ones
    # (Chan et al.): one pass without the cancellation of a sum of squares.
    row = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = row < M
    base = row * D
    mean = tl.zeros((BLOCK_M,), ACC)
    q = tl.zeros((BLOCK_M,), ACC)
    for c0 in range(0, D, BLOCK_N):
        c = c0 + tl.arange(0, BLOCK_N)
        m = rmask[:, None] & (c < D)[None, :]
        v = tl.load(x + base[:, None] + c[None, :], mask=m, other=0).to(ACC)
        if RMS:
            q += tl.sum(v * v, 1)
        else:
            n_t = tl.minimum(D - c0, BLOCK_N).to(ACC)
            mean_t = tl.sum(v, 1) / n_t
            dev = tl.where(m, v - mean_t[:, None], 0)
            delta = mean_t - mean
            n = c0 + n_t
            mean += delta * (n_t / n)
            q += tl.sum(dev * dev, 1) + delta * delta * (c0 * (n_t / n))
    rstd = 1.0 / tl.sqrt(q / D + eps)
    if not RMS:
        tl.store(mean_out + row, mean.to(mean_out.dtype.element_ty), mask=rmask)
    tl.store(rstd_out + row, rstd.to(rstd_out.dtype.element_ty), mask=rmask)
    for c0 in range(0, D, BLOCK_N):
        c = c0 + tl.arange(0, BLOCK_N)
        cmask = c < D
        m = rmask[:, None] & cmask[None, :]
        v = tl.load(x + base[:, None] + c[None, :], mask=m, other=0).to(ACC)
        out = (v - mean[:, None]) * rstd[:, None]
        if HAS_W:
            out = out * tl.load(w + c, mask=cmask, other=0).to(ACC)[None, :]
        if HAS_B:
            out = out + tl.load(b + c, mask=cmask, other=0).to(ACC)[None, :]
        tl.store(y + base[:, None] + c[None, :], out.to(y.dtype.element_ty), mask=m)


@triton.jit
def _norm_bwd_dx_kernel(
    dy,
    x,
    w,
    mean_in,
    rstd_in,
    dx,
    M,
    D,
    HAS_W: tl.constexpr,
    RMS: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # dx for rows longer than a tile: dy and x read twice (the row sums, then dx).
    row = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = row < M
    rstd = tl.load(rstd_in + row, mask=rmask, other=0).to(ACC)
    if RMS:
        mean = tl.zeros((BLOCK_M,), ACC)
    else:
        mean = tl.load(mean_in + row, mask=rmask, other=0).to(ACC)
    base = row * D
    c1 = tl.zeros((BLOCK_M,), ACC)
    c2 = tl.zeros((BLOCK_M,), ACC)
    for c0 in range(0, D, BLOCK_N):
        c = c0 + tl.arange(0, BLOCK_N)
        cmask = c < D
        m = rmask[:, None] & cmask[None, :]
        offs = base[:, None] + c[None, :]
        g = tl.load(dy + offs, mask=m, other=0).to(ACC)
        if HAS_W:
            g = g * tl.load(w + c, mask=cmask, other=0).to(ACC)[None, :]
        xhat = tl.where(
            m, (tl.load(x + offs, mask=m, other=0).to(ACC) - mean[:, None]) * rstd[:, None], 0
        )
        c1 += tl.sum(g * xhat, 1)
        c2 += tl.sum(g, 1)
    c1 = c1 / D
    c2 = c2 / D
    for c0 in range(0, D, BLOCK_N):
        c = c0 + tl.arange(0, BLOCK_N)
        cmask = c < D
        m = rmask[:, None] & cmask[None, :]
        offs = base[:, None] + c[None, :]
        g = tl.load(dy + offs, mask=m, other=0).to(ACC)
        if HAS_W:
            g = g * tl.load(w + c, mask=cmask, other=0).to(ACC)[None, :]
        xhat = (tl.load(x + offs, mask=m, other=0).to(ACC) - mean[:, None]) * rstd[:, None]
        if RMS:
            d = (g - xhat * c1[:, None]) * rstd[:, None]
        else:
            d = (g - xhat * c1[:, None] - c2[:, None]) * rstd[:, None]
        tl.store(dx + offs, d.to(dx.dtype.element_ty), mask=m)


@triton.jit
def _norm_bwd_row_kernel(
    dy,
    x,
    w,
    mean_in,
    rstd_in,
    dx,
    pw,
    pb,
    M,
    D,
    HAS_W: tl.constexpr,
    RMS: tl.constexpr,
    PARTIALS: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Layer/RMS norm backward for rows that fit one tile (D <= BLOCK_N): dy and x read
    # once; each program takes every num_programs-th block of rows and, with PARTIALS,
    # also sums its rows' dw = dy * xhat and db = dy into row `pid` of pw and pb (a
    # second kernel adds those rows up: no column-sum pass over the whole input).
    pid = tl.program_id(0)
    c = tl.arange(0, BLOCK_N)
    cmask = c < D
    if HAS_W:
        wv = tl.load(w + c, mask=cmask, other=0).to(ACC)
    aw = tl.zeros((BLOCK_N,), ACC)
    ab = tl.zeros((BLOCK_N,), ACC)
    for rb in range(pid, tl.cdiv(M, BLOCK_M), tl.num_programs(0)):
        row = rb * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
        rmask = row < M
        m = rmask[:, None] & cmask[None, :]
        offs = row[:, None] * D + c[None, :]
        rstd = tl.load(rstd_in + row, mask=rmask, other=0).to(ACC)
        xv = tl.load(x + offs, mask=m, other=0).to(ACC)
        if RMS:
            xhat = xv * rstd[:, None]
        else:
            mean = tl.load(mean_in + row, mask=rmask, other=0).to(ACC)
            xhat = tl.where(m, (xv - mean[:, None]) * rstd[:, None], 0)
        g0 = tl.load(dy + offs, mask=m, other=0).to(ACC)
        g = g0
        if HAS_W:
            g = g0 * wv[None, :]
        c1 = tl.sum(g * xhat, 1) / D
        if RMS:
            d = (g - xhat * c1[:, None]) * rstd[:, None]
        else:
            d = (g - xhat * c1[:, None] - (tl.sum(g, 1) / D)[:, None]) * rstd[:, None]
        tl.store(dx + offs, d.to(dx.dtype.element_ty), mask=m)
        if PARTIALS:
            aw += tl.sum(g0 * xhat, 0)
            ab += tl.sum(g0, 0)
    if PARTIALS:
        tl.store(pw + pid * D + c, aw, mask=cmask)
        tl.store(pb + pid * D + c, ab, mask=cmask)


@triton.jit
def _norm_bwd_dw_kernel(
    dy,
    x,
    mean_in,
    rstd_in,
    dw,
    db,
    M,
    D,
    RMS: tl.constexpr,
    PARTIALS: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Column sums over rows (layer/rms norm): dw = sum dy * xhat, db = sum dy; with
    # PARTIALS, the sums of _norm_bwd_row_kernel's M rows of partials (dy: dw's, x: db's).
    c = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = c < D
    aw = tl.zeros((BLOCK_M, BLOCK_N), ACC)
    ab = tl.zeros((BLOCK_M, BLOCK_N), ACC)
    for r0 in range(0, M, BLOCK_M):
        row = r0 + tl.arange(0, BLOCK_M)
        rmask = row < M
        m = rmask[:, None] & cmask[None, :]
        offs = row[:, None].to(tl.int64) * D + c[None, :]
        g = tl.load(dy + offs, mask=m, other=0).to(ACC)
        if PARTIALS:
            aw += g
            ab += tl.load(x + offs, mask=m, other=0).to(ACC)
        else:
            rstd = tl.load(rstd_in + row, mask=rmask, other=0).to(ACC)
            if RMS:
                mean = tl.zeros((BLOCK_M,), ACC)
            else:
                mean = tl.load(mean_in + row, mask=rmask, other=0).to(ACC)
            xhat = (tl.load(x + offs, mask=m, other=0).to(ACC) - mean[:, None]) * rstd[:, None]
            aw += g * xhat
            ab += g
    tl.store(dw + c, tl.sum(aw, 0).to(dw.dtype.element_ty), mask=cmask)
    if db is not None:
        tl.store(db + c, tl.sum(ab, 0).to(db.dtype.element_ty), mask=cmask)


def _row_blocks(M, D):
    n = next_pow2(max(D, 1))
    budget = spec("reduction_block", D) or 4096
    bn = min(n, budget)
    bm = pow2_at_most(max(M, 1), max(1, budget // bn))
    return bm, bn


def _norm_forward(x, weight, bias, M, D, eps, rms, y, mean, rstd):
    """Rows of one tile (_rows.row_tile; the weight and bias count as a second row-long
    array) read x once; longer rows twice."""
    if M == 0:
        return
    tile = row_tile(M, D, 1, arrays=1 if weight is None else 2)
    if tile is not None:
        kernel, (bm, bn, warps) = _norm_fwd_tile_kernel, tile
        if not rms:  # the driver's own warps for a layer norm forward, if any
            warps = spec("layer_norm_fwd_warps", bn) or warps
    else:
        kernel, (bm, bn) = _norm_fwd_kernel, _row_blocks(M, D)
        warps = warps_for(bm * bn)
    launch(
        kernel,
        (cdiv(M, bm),),
        x,
        weight if weight is not None else x,
        bias if bias is not None else x,
        y,
        mean if mean is not None else rstd,
        rstd,
        M,
        D,
        eps,
        HAS_W=weight is not None,
        HAS_B=bias is not None,
        RMS=rms,
        ACC=tl_float_acc(x.dtype),
        BLOCK_M=bm,
        BLOCK_N=bn,
        num_warps=warps,
    )


def _norm_dx(dy, x, weight, mean, rstd, M, D, rms, dx):
    bm, bn = _row_blocks(M, D)
    launch(
        _norm_bwd_dx_kernel,
        (cdiv(M, bm),),
        dy,
        x,
        weight if weight is not None else x,
        mean if mean is not None else rstd,
        rstd,
        dx,
        M,
        D,
        HAS_W=weight is not None,
        RMS=rms,
        ACC=tl_float_acc(x.dtype),
        BLOCK_M=bm,
        BLOCK_N=bn,
        num_warps=warps_for(bm * bn),
    )


def _norm_dw(dy, x, mean, rstd, M, D, rms, dw, db, partials=False):
    bn = min(next_pow2(max(D, 1)), 64)
    budget = spec("reduction_block", M) or 4096
    bm = pow2_at_most(max(M, 1), max(1, budget // bn))
    launch(
        _norm_bwd_dw_kernel,
        (cdiv(D, bn),),
        dy,
        x,
        mean if mean is not None else rstd,
        rstd,
        dw,
        db,
        M,
        D,
        RMS=rms,
        PARTIALS=partials,
        ACC=tl_float_acc(x.dtype),
        BLOCK_M=bm,
        BLOCK_N=bn,
    )


def _norm_backward(dy, x, w, mean, rstd, M, D, rms, dx, dw, db):
    """Layer/RMS norm backward: dx (when given) and dw/db (when given). Rows of one tile
    take _norm_bwd_row_kernel (one read of dy and x; dw/db from its per-program partials,
    two launches in all); wider rows the two-pass dx kernel and a column-sum dw kernel."""
    if M == 0:
        for t in (dw, db):
            if t is not None:
                t.zero_()
        return
    tile = row_tile(M, D, 1, arrays=BWD_ARRAYS) if dx is not None else None
    if tile is None:
        if dx is not None:
            _norm_dx(dy, x, w, mean, rstd, M, D, rms, dx)
        if dw is not None:
            _norm_dw(dy, x, mean, rstd, M, D, rms, dw, db)
        return
    bm, bn, warps = tile
    blocks = cdiv(M, bm)
    programs = min(blocks, spec("norm_backward_programs") or blocks)
    acc = tl_float_acc(x.dtype)
    pw = empty((programs, D), float_acc(x.dtype), x.device) if dw is not None else dx
    pb = empty((programs, D), float_acc(x.dtype), x.device) if dw is not None else dx
    launch(
        _norm_bwd_row_kernel,
        (programs,),
        dy,
        x,
        w if w is not None else x,
        mean if mean is not None else rstd,
        rstd,
        dx,
        pw,
        pb,
        M,
        D,
        HAS_W=w is not None,
        RMS=rms,
        PARTIALS=dw is not None,
        ACC=acc,
        BLOCK_M=bm,
        BLOCK_N=bn,
        num_warps=warps,
    )
    if dw is not None:
        _norm_dw(pw, pb, None, rstd, programs, D, rms, dw, db, partials=True)


def _check_shapes(x, normalized_shape, weight, bias, rms=False):
    """PyTorch's checks of layer_norm's and rms_norm's arguments, with its messages. The
    input's sizes compared through _symbolic: a size-generic plan replays only where
    they hold."""
    shape = list(normalized_shape)
    if not x.dtype.is_floating_point:  # (layer_norm's is its manifest entry's dtypes:)
        kind = "rms_norm" if rms else "layer_norm"
        raise NotImplementedError(f"\"{kind}\" not implemented for '{scalar_name(x.dtype)}'")
    if not shape:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
            f"least one element, but got normalized_shape = {shape}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(t.shape)} and normalized_shape = {shape}"
            )
    got = sizes(x)
    if x.dim() < len(shape) or any(a != b for a, b in zip(got[x.dim() - len(shape) :], shape)):
        dims = ", ".join(str(v) for v in shape)
        want = f"[*{dims}]" if rms else f"[*, {dims}]"
        raise RuntimeError(
            f"Given normalized_shape={shape}, expected input with shape {want}, but got "
            f"input of size{list(x.shape)}"
        )


def _split(x, normalized_shape):
    axis = x.dim() - len(normalized_shape)
    shape = sizes(x)  # expressions while a size-generic plan records (_symbolic)
    M = math.prod(shape[:axis])
    D = math.prod(shape[axis:])
    return axis, M, D


def _stats(x, axis):
    """An empty per-row statistic of x (its leading axis dims, then ones)."""
    shape = list(sizes(x)[:axis]) + [1] * (x.dim() - axis)
    return empty(shape, stat_dtype(x.dtype), x.device)


@kernel(shapes=True)  # sizes through _symbolic: one plan per shape class
def native_layer_norm(
    input: torch.Tensor,
    normalized_shape: list[int],
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check_shapes(input, normalized_shape, weight, bias)
    x = contiguous(input)
    axis, M, D = _split(x, normalized_shape)
    y = empty(sizes(x), x.dtype, x.device)
    mean, rstd = _stats(x, axis), _stats(x, axis)
    w = contiguous(weight) if weight is not None else None
    b = contiguous(bias) if bias is not None else None
    _norm_forward(x, w, b, M, D, eps, False, y, mean, rstd)
    return y, mean, rstd


@kernel(shapes=True)
def native_layer_norm_backward(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    normalized_shape: list[int],
    mean: torch.Tensor,
    rstd: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    output_mask: list[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    x = contiguous(input)
    dy = contiguous(grad_out)
    _, M, D = _split(x, normalized_shape)
    w = contiguous(weight) if weight is not None else None
    dx = empty(sizes(x), x.dtype, x.device) if output_mask[0] else None
    dw_t = db_t = None
    if output_mask[1] or output_mask[2]:
        pdt = weight.dtype if weight is not None else x.dtype
        dw_t = torch.empty(normalized_shape, dtype=pdt, device=x.device)
        db_t = torch.empty(normalized_shape, dtype=pdt, device=x.device)
    _norm_backward(dy, x, w, mean, rstd, M, D, False, dx, dw_t, db_t)
    dw = dw_t if output_mask[1] else None
    db = db_t if output_mask[2] else None
    return dx, dw, db


@kernel(shapes=True)
def rms_norm_fwd(
    input: torch.Tensor,
    normalized_shape: list[int],
    weight: torch.Tensor | None,
    eps: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """torch_ext::rms_norm_fwd -> (out, rstd); eps None means dtype eps."""
    _check_shapes(input, normalized_shape, weight, None, rms=True)
    x = contiguous(input)
    axis, M, D = _split(x, normalized_shape)
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    y = empty(sizes(x), x.dtype, x.device)
    rstd = _stats(x, axis)
    w = contiguous(weight) if weight is not None else None
    _norm_forward(x, w, None, M, D, eps, True, y, None, rstd)
    return y, rstd


@kernel(shapes=True)
def rms_norm_bwd(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    normalized_shape: list[int],
    rstd: torch.Tensor,
    weight: torch.Tensor | None,
    output_mask: list[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    x = contiguous(input)
    dy = contiguous(grad_out)
    _, M, D = _split(x, normalized_shape)
    w = contiguous(weight) if weight is not None else None
    dx = empty(sizes(x), x.dtype, x.device) if output_mask[0] else None
    dw = None
    if output_mask[1] and weight is not None:
        dw = torch.empty(normalized_shape, dtype=weight.dtype, device=x.device)
    _norm_backward(dy, x, w, None, rstd, M, D, True, dx, dw, None)
    return dx, dw
