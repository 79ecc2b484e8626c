"""Spatial ops on N-C-spatial tensors, 1 to 3 spatial dims: adaptive
pooling, interpolation (linear/bilinear/trilinear, bicubic, antialiased
bilinear/bicubic, nearest, nearest-exact), reflection/replication padding,
grid sampling, im2col/col2im.

Every kernel runs one program per block of output elements (int64 offsets),
on planes: a contiguous (N*C, D, H, W) view of the input, where a 2-d op has
D = 1 and a 1-d op D = H = 1.  Sums and weights are float32 (float64 for
float64 tensors); the backward kernels that scatter (interpolation, padding)
add with float32 (float64) atomics into a temporary that is cast into
grad_input once, the others gather.  Outputs of another memory format
(channels_last) are filled through a contiguous temporary.

Conventions (see ops/__init__.py): (2) structured impls get the impl's
arguments and the outputs sized by PyTorch's meta function, which has checked
the arguments; (3) plain ops check their arguments here, as PyTorch's CPU
kernels do, and return (or fill) the result.
"""

import math
import struct

import torch
import triton
import triton.language as tl

from ._launch import cdiv, launch
from ._math import _rint
from .conv import (
    _col2im,
    _dense,
    _im2col,
    _spatial3,
    _split3,
    _split4,
    _store,
    _write_back,
    upsample_nearest,
    upsample_nearest_backward,
)
from .copy import copy_kernel, fill_
from .grid_sample import _source
from .index import _block, _gather_scatter
from .reduction import _contiguous
from ._common import kernel


def _acc(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def _tl_acc(dtype):
    return tl.float64 if dtype == torch.float64 else tl.float32


def _grid(total):
    block = _block(total)
    return (cdiv(total, block),), block


def _accumulator(like):
    """A zeroed float32 (float64) buffer of like's shape, for atomics."""
    acc = torch.empty(like.shape, dtype=_acc(like.dtype), device=like.device)
    fill_(acc, 0)
    return acc


# -- adaptive pooling, 2-d and 3-d ---------------------------------------------------
#   _adaptive_avg_pool{2,3}d(self, output_size) -> out                     (plain)
#   _adaptive_avg_pool{2,3}d_backward(grad_output, self) -> grad_input     (plain)
#   adaptive_avg_pool{2,3}d.out(self, output_size, out)                    (plain)
#   adaptive_max_pool{2,3}d.out impl: (self, output_size, out, indices)   (structured)
#   adaptive_max_pool{2,3}d_backward.grad_input impl: (grad_output, self, indices, grad_input)
# Output o pools input rows [floor(o*I/O), ceil((o+1)*I/O)); input row i lies
# in the windows of outputs [floor(i*O/I), ceil((i+1)*O/I)) (the same
# bounds, roles swapped), which the backward gathers.  Max indices are
# offsets into the input's (H, W) plane / (D, H, W) volume.


@triton.jit
def _window(o, I, O):
    return (o * I) // O, ((o + 1) * I + O - 1) // O


def _max_window(I, O):
    """The longest window of an adaptive pool from I to O (a loop bound)."""
    return min(I, cdiv(I, O) + 1) if O else 0


@triton.jit
def _adaptive_avg_kernel(
    x, out, total, D, H, W, OD, OH, OW, KD, KH, KW, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = _split4(e, OD, OH, OW)
    ds, de = _window(od, D, OD)
    hs, he = _window(oh, H, OH)
    ws, we = _window(ow, W, OW)
    acc = tl.zeros((BLOCK,), ACC)
    for kd in range(0, KD):
        idd = ds + kd
        for kh in range(0, KH):
            ih = hs + kh
            row = ((plane * D + idd) * H + ih) * W
            for kw in range(0, KW):
                iw = ws + kw
                ok = mask & (idd < de) & (ih < he) & (iw < we)
                acc += tl.load(x + row + iw, mask=ok, other=0).to(ACC)
    _store(out, e, acc / ((de - ds) * (he - hs) * (we - ws)).to(ACC), mask)


@triton.jit
def _adaptive_avg_backward_kernel(
    g, gin, total, D, H, W, OD, OH, OW, KD, KH, KW, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    # Each input element gathers grad / window size from the outputs whose
    # windows hold it (KD x KH x KW of them at most).
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, idd, ih, iw = _split4(e, D, H, W)
    ods, ode = _window(idd, OD, D)
    ohs, ohe = _window(ih, OH, H)
    ows, owe = _window(iw, OW, W)
    acc = tl.zeros((BLOCK,), ACC)
    for kd in range(0, KD):
        od = ods + kd
        ds, de = _window(od, D, OD)
        for kh in range(0, KH):
            oh = ohs + kh
            hs, he = _window(oh, H, OH)
            row = ((plane * OD + od) * OH + oh) * OW
            for kw in range(0, KW):
                ow = ows + kw
                ws, we = _window(ow, W, OW)
                ok = mask & (od < ode) & (oh < ohe) & (ow < owe)
                v = tl.load(g + row + ow, mask=ok, other=0).to(ACC)
                acc += v / tl.maximum((de - ds) * (he - hs) * (we - ws), 1).to(ACC)
    _store(gin, e, acc, mask)


@triton.jit
def _adaptive_max_kernel(
    x, out, idx, total, D, H, W, OD, OH, OW, KD, KH, KW, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    # PyTorch's rule: a value replaces the maximum when greater or NaN (so
    # the last NaN of a window wins); the index starts at the window's corner.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = _split4(e, OD, OH, OW)
    ds, de = _window(od, D, OD)
    hs, he = _window(oh, H, OH)
    ws, we = _window(ow, W, OW)
    best = tl.full((BLOCK,), float("-inf"), ACC)
    bidx = (ds * H + hs) * W + ws
    for kd in range(0, KD):
        idd = ds + kd
        for kh in range(0, KH):
            ih = hs + kh
            for kw in range(0, KW):
                iw = ws + kw
                ok = mask & (idd < de) & (ih < he) & (iw < we)
                at = (idd * H + ih) * W + iw
                v = tl.load(x + plane * D * H * W + at, mask=ok, other=0).to(ACC)
                take = ok & ((v > best) | (v != v))
                best = tl.where(take, v, best)
                bidx = tl.where(take, at, bidx)
    _store(out, e, best, mask)
    tl.store(idx + e, bidx, mask=mask)


def _windows(in_shape, out_shape, nsp):
    """(D, H, W, OD, OH, OW, KD, KH, KW): sizes and longest windows."""
    i, o = _spatial3(in_shape, nsp), _spatial3(out_shape, nsp)
    return (*i, *o, *(_max_window(a, b) for a, b in zip(i, o)))


def _check_adaptive_input(name, x, output_size, nsp):
    if len(output_size) != nsp:
        raise RuntimeError(f"{name}: output_size must be {nsp}, got {list(output_size)}")
    if x.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(
            f"{name}(): Expected {nsp + 1}D or {nsp + 2}D tensor, but got {list(x.shape)}"
        )
    for d in range(x.dim() - nsp, x.dim()):
        if x.shape[d] <= 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(x.shape)} with dimension {d} being empty"
            )
    if any(o < 0 for o in output_size):
        raise RuntimeError(
            f"{name}: elements of output_size must be greater than or equal to 0 "
            f"but received {list(output_size)}"
        )
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating point input, got {x.dtype}")


def _adaptive_avg_into(self, nsp, out):
    x = _contiguous(self)
    total = out.numel()
    if total == 0:
        return
    o_t = _dense(out)
    grid, block = _grid(total)
    launch(
        _adaptive_avg_kernel,
        grid,
        x,
        o_t,
        total,
        *_windows(x.shape, out.shape, nsp),
        ACC=_tl_acc(x.dtype),
        BLOCK=block,
    )
    _write_back(out, o_t)


def _adaptive_out_shape(self, output_size):
    return list(self.shape[: self.dim() - len(output_size)]) + [int(o) for o in output_size]


def _memory_format(x):
    """channels_last(_3d) for such a batched input (as PyTorch's
    suggest_memory_format), else contiguous."""
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
    if fmt is not None and not x.is_contiguous() and x.is_contiguous(memory_format=fmt):
        return fmt
    return torch.contiguous_format


def _adaptive_avg_fns(nsp):
    name = f"adaptive_avg_pool{nsp}d"

    def forward(self, output_size):
        _check_adaptive_input(name, self, output_size, nsp)
        out = torch.empty(
            _adaptive_out_shape(self, output_size),
            dtype=self.dtype,
            device=self.device,
            memory_format=_memory_format(self),
        )
        _adaptive_avg_into(self, nsp, out)
        return out

    def forward_out(self, output_size, out):
        _check_adaptive_input(name, self, output_size, nsp)
        if out.dtype != self.dtype:
            raise RuntimeError(
                f"{name}(): Expected out to have dtype {self.dtype}, but got {out.dtype}"
            )
        out.resize_(_adaptive_out_shape(self, output_size))  # a plain out= op sizes its own out
        _adaptive_avg_into(self, nsp, out)
        return out

    def backward(grad_output, self):
        bname = name + "_backward"
        for d in range(1, grad_output.dim()):
            if grad_output.shape[d] <= 0:
                raise RuntimeError(
                    f"{bname}(): Expected grad_output to have non-zero size for non-batch "
                    f"dimensions, but grad_output has sizes {list(grad_output.shape)} with "
                    f"dimension {d} being empty"
                )
        if (
            self.dim() not in (nsp + 1, nsp + 2)
            or grad_output.dim() != self.dim()
            or grad_output.shape[:-nsp] != self.shape[:-nsp]
        ):
            raise RuntimeError(
                f"{bname}(): grad_output of shape {list(grad_output.shape)} does "
                f"not match an input of shape {list(self.shape)}"
            )
        if grad_output.dtype != self.dtype:
            raise RuntimeError(
                f"{bname}(): expected dtype {self.dtype} for `grad_output` but got "
                f"dtype {grad_output.dtype}"
            )
        g = _contiguous(grad_output)
        gi = torch.empty(
            self.shape, dtype=self.dtype, device=self.device, memory_format=_memory_format(self)
        )
        total = gi.numel()
        if total:
            gi_t = _dense(gi)
            grid, block = _grid(total)
            launch(
                _adaptive_avg_backward_kernel,
                grid,
                g,
                gi_t,
                total,
                *_spatial3(gi.shape, nsp),
                *_spatial3(g.shape, nsp),
                *(
                    _max_window(o, i)
                    for i, o in zip(_spatial3(gi.shape, nsp), _spatial3(g.shape, nsp))
                ),
                ACC=_tl_acc(g.dtype),
                BLOCK=block,
            )
            _write_back(gi, gi_t)
        return gi

    return forward, forward_out, backward


def _adaptive_max_fns(nsp):
    def forward_out(self, output_size, out, indices):
        x = _contiguous(self)
        total = out.numel()
        if total == 0:
            return
        o_t, i_t = _dense(out), _dense(indices)
        grid, block = _grid(total)
        launch(
            _adaptive_max_kernel,
            grid,
            x,
            o_t,
            i_t,
            total,
            *_windows(x.shape, out.shape, nsp),
            ACC=_tl_acc(x.dtype),
            BLOCK=block,
        )
        _write_back(out, o_t)
        _write_back(indices, i_t)

    def backward_out(grad_output, self, indices, grad_input):
        # Adds each gradient at its index (fp16/bf16 through float32).
        volume = math.prod(self.shape[self.dim() - nsp :])
        planes = self.numel() // volume if self.numel() else 0
        gi = _dense(grad_input)
        fill_(gi, 0)
        if grad_output.numel():
            g2 = _contiguous(grad_output).reshape(planes, -1)
            i2 = _contiguous(indices).reshape(planes, -1)
            _gather_scatter(i2, g2, gi.view(planes, -1), 1, 2)
        _write_back(grad_input, gi)

    return forward_out, backward_out


# -- linear interpolation, 1-d to 3-d (structured impls) ---------------------------
#   upsample_linear1d.out impl: (self, output_size, align_corners, scales, out)
#   upsample_bilinear2d.out impl: (self, output_size, align_corners, scales_h, scales_w, out)
#   upsample_trilinear3d.out impl: (self, output_size, align_corners, scales_d, scales_h, scales_w, out)
#   their _backward.grad_input impls: (grad_output, output_size, input_size, align_corners,
#                                      *scales, grad_input)
# Source position of output o (float32, ATen/native/UpSample.h):
#   align_corners: o * (I-1)/(O-1)   (0 when O == 1)
#   else:          max(scale * (o + 0.5) - 0.5, 0), scale = 1/scales when given, else I/O
# then i0 = min(floor(src), I-1), i1 = i0 + (i0 < I-1), lambda = clamp(src - i0, 0, 1).
# As PyTorch's CPU kernels, a dimension with O == I is copied whatever the scale.


def _linear_scale(in_size, out_size, align_corners, scale, size_rule=True):
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if size_rule and out_size == in_size:
        return 1.0
    return (1.0 / scale) if scale is not None and scale > 0 else in_size / out_size


@triton.jit
def _scaled_src(o, scale_hi, scale_lo, ALIGN: tl.constexpr, ACC: tl.constexpr):
    # Output index o -> source coordinate, in ACC (float32, float64 for float64
    # data, as PyTorch's opmath); the scale comes as two float32 parts whose sum
    # is the float64 scale.
    of = o.to(ACC)
    scale = tl.zeros_like(of) + scale_hi
    if ACC == tl.float64:
        scale = scale + scale_lo
    if ALIGN:
        return scale * of
    return scale * (of + 0.5) - 0.5


@triton.jit
def _linear_src(o, scale_hi, scale_lo, size, ALIGN: tl.constexpr, ACC: tl.constexpr):
    src = _scaled_src(o, scale_hi, scale_lo, ALIGN, ACC)
    if not ALIGN:
        src = tl.maximum(src, 0.0)
    i0 = tl.minimum(src.to(tl.int64), size - 1)  # src >= 0: truncation is floor
    lam = tl.minimum(tl.maximum(src - i0.to(ACC), 0.0), 1.0)
    i1 = tl.where(i0 < size - 1, i0 + 1, i0)
    return i0, i1, lam


@triton.jit
def _lerp_row(x, row, w0, w1, lw, mask, ACC: tl.constexpr):
    return (1 - lw) * tl.load(x + row + w0, mask=mask, other=0).to(ACC) + lw * tl.load(
        x + row + w1, mask=mask, other=0
    ).to(ACC)


@triton.jit
def _spread_row(acc, row, w0, w1, lw, g, mask):
    tl.atomic_add(acc + row + w0, g * (1 - lw), mask=mask)
    tl.atomic_add(acc + row + w1, g * lw, mask=mask)


@triton.jit
def _linear_kernel(
    x,
    out,
    total,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    sd,
    sd_lo,
    sh,
    sh_lo,
    sw,
    sw_lo,
    ALIGN: tl.constexpr,
    NDIM: tl.constexpr,
    BACKWARD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Forward: out[e] from x.  Backward: x is grad_output (by output element),
    # out the float32 (float64) accumulator of grad_input.  NDIM spatial dims
    # interpolate (the others are 1).
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = _split4(e, OD, OH, OW)
    w0, w1, lw = _linear_src(ow, sw, sw_lo, W, ALIGN, ACC)
    if NDIM >= 2:
        h0, h1, lh = _linear_src(oh, sh, sh_lo, H, ALIGN, ACC)
    else:
        h0, h1, lh = oh, oh, tl.zeros((BLOCK,), ACC)
    if NDIM == 3:
        d0, d1, ld = _linear_src(od, sd, sd_lo, D, ALIGN, ACC)
    else:
        d0, d1, ld = od, od, tl.zeros((BLOCK,), ACC)
    r00 = ((plane * D + d0) * H + h0) * W
    r01 = ((plane * D + d0) * H + h1) * W
    r10 = ((plane * D + d1) * H + h0) * W
    r11 = ((plane * D + d1) * H + h1) * W
    if BACKWARD:
        g = tl.load(x + e, mask=mask, other=0).to(ACC)
        if NDIM == 1:
            _spread_row(out, r00, w0, w1, lw, g, mask)
        elif NDIM == 2:
            _spread_row(out, r00, w0, w1, lw, g * (1 - lh), mask)
            _spread_row(out, r01, w0, w1, lw, g * lh, mask)
        else:
            g0 = g * (1 - ld)
            g1 = g * ld
            _spread_row(out, r00, w0, w1, lw, g0 * (1 - lh), mask)
            _spread_row(out, r01, w0, w1, lw, g0 * lh, mask)
            _spread_row(out, r10, w0, w1, lw, g1 * (1 - lh), mask)
            _spread_row(out, r11, w0, w1, lw, g1 * lh, mask)
    else:
        v = _lerp_row(x, r00, w0, w1, lw, mask, ACC)
        if NDIM >= 2:
            v = (1 - lh) * v + lh * _lerp_row(x, r01, w0, w1, lw, mask, ACC)
        if NDIM == 3:
            v1 = (1 - lh) * _lerp_row(x, r10, w0, w1, lw, mask, ACC) + lh * _lerp_row(
                x, r11, w0, w1, lw, mask, ACC
            )
            v = (1 - ld) * v + ld * v1
        if out.dtype.element_ty.is_int():  # uint8 images: to the nearest, not truncated
            v = v + 0.5
        _store(out, e, v, mask)


def _split_f64(v):
    """v as float32 hi + lo (the kernel adds them in float64 for float64 data)."""
    hi = struct.unpack("f", struct.pack("f", v))[0]
    return hi, v - hi


def _linear_args(in_shape, out_shape, align_corners, scales, size_rule=True):
    nsp = len(scales)
    i, o = _spatial3(in_shape, nsp), _spatial3(out_shape, nsp)
    s = [
        _split_f64(float(_linear_scale(a, b, align_corners, c, size_rule)))
        for a, b, c in zip(i, o, [None] * (3 - nsp) + list(scales))
    ]
    return (*i, *o, *(part for pair in s for part in pair))


def _upsample_linear(self, out, align_corners, scales):
    x = _contiguous(self)
    total = out.numel()
    if total == 0:
        return
    o_t = _dense(out)
    grid, block = _grid(total)
    launch(
        _linear_kernel,
        grid,
        x,
        o_t,
        total,
        *_linear_args(x.shape, out.shape, align_corners, scales),
        ALIGN=bool(align_corners),
        NDIM=len(scales),
        BACKWARD=False,
        ACC=_tl_acc(x.dtype),
        BLOCK=block,
    )
    _write_back(out, o_t)


def _upsample_linear_backward(grad_output, grad_input, align_corners, scales):
    g = _contiguous(grad_output)
    acc = _accumulator(grad_input)
    total = g.numel()
    if total:
        grid, block = _grid(total)
        launch(
            _linear_kernel,
            grid,
            g,
            acc,
            total,
            *_linear_args(grad_input.shape, g.shape, align_corners, scales),
            ALIGN=bool(align_corners),
            NDIM=len(scales),
            BACKWARD=True,
            ACC=_tl_acc(acc.dtype),
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


@kernel("upsample_linear1d")
def upsample_linear1d_out(self, output_size, align_corners, scales, out):
    _upsample_linear(self, out, align_corners, (scales,))


@kernel("upsample_linear1d_backward")
def upsample_linear1d_backward_out(
    grad_output, output_size, input_size, align_corners, scales, grad_input
):
    _upsample_linear_backward(grad_output, grad_input, align_corners, (scales,))


@kernel("upsample_bilinear2d")
def upsample_bilinear2d_out(self, output_size, align_corners, scales_h, scales_w, out):
    _upsample_linear(self, out, align_corners, (scales_h, scales_w))


@kernel("upsample_bilinear2d_backward")
def upsample_bilinear2d_backward_out(
    grad_output, output_size, input_size, align_corners, scales_h, scales_w, grad_input
):
    _upsample_linear_backward(grad_output, grad_input, align_corners, (scales_h, scales_w))


@kernel("upsample_trilinear3d")
def upsample_trilinear3d_out(self, output_size, align_corners, scales_d, scales_h, scales_w, out):
    _upsample_linear(self, out, align_corners, (scales_d, scales_h, scales_w))


@kernel("upsample_trilinear3d_backward")
def upsample_trilinear3d_backward_out(
    grad_output, output_size, input_size, align_corners, scales_d, scales_h, scales_w, grad_input
):
    _upsample_linear_backward(
        grad_output, grad_input, align_corners, (scales_d, scales_h, scales_w)
    )


# -- bicubic interpolation, 2-d (structured impls) ------------------------------------
#   upsample_bicubic2d.out impl: (self, output_size, align_corners, scales_h, scales_w, out)
#   upsample_bicubic2d_backward.grad_input impl:
#       (grad_output, output_size, input_size, align_corners, scales_h, scales_w, grad_input)
# Source position as linear's without the clamp at 0 (PyTorch's cubic=True)
# and without the out == in copy (PyTorch's CPU forward has none here; its
# backward has, and is not the forward's adjoint there: ours is);
# i = min(floor(src), I-1), t = clamp(src - i, 0, 1); the 4 x 4 taps at rows
# and columns i-1 .. i+2 (clamped into the input) with Keys' cubic
# convolution weights, A = -0.75 (ATen/native/UpSample.h).


@triton.jit
def _cubic_src(o, scale_hi, scale_lo, size, ALIGN: tl.constexpr, ACC: tl.constexpr):
    src = _scaled_src(o, scale_hi, scale_lo, ALIGN, ACC)
    i = src.to(tl.int64)
    i = tl.where(i.to(ACC) > src, i - 1, i)  # floor (src may be negative)
    i = tl.minimum(i, size - 1)
    t = tl.minimum(tl.maximum(src - i.to(ACC), 0.0), 1.0)
    return i, t


@triton.jit
def _cubic_weights(t):
    A = -0.75
    u = t + 1
    v = 1 - t
    w = v + 1
    return (
        ((A * u - 5 * A) * u + 8 * A) * u - 4 * A,
        ((A + 2) * t - (A + 3)) * t * t + 1,
        ((A + 2) * v - (A + 3)) * v * v + 1,
        ((A * w - 5 * A) * w + 8 * A) * w - 4 * A,
    )


@triton.jit
def _tap(i, k, size):
    return tl.minimum(tl.maximum(i - 1 + k, 0), size - 1)


@triton.jit
def _cubic_row(x, row, c0, c1, c2, c3, w0, w1, w2, w3, mask, ACC: tl.constexpr):
    return (
        tl.load(x + row + c0, mask=mask, other=0).to(ACC) * w0
        + tl.load(x + row + c1, mask=mask, other=0).to(ACC) * w1
        + tl.load(x + row + c2, mask=mask, other=0).to(ACC) * w2
        + tl.load(x + row + c3, mask=mask, other=0).to(ACC) * w3
    )


@triton.jit
def _cubic_spread(acc, row, c0, c1, c2, c3, w0, w1, w2, w3, g, mask):
    tl.atomic_add(acc + row + c0, g * w0, mask=mask)
    tl.atomic_add(acc + row + c1, g * w1, mask=mask)
    tl.atomic_add(acc + row + c2, g * w2, mask=mask)
    tl.atomic_add(acc + row + c3, g * w3, mask=mask)


@triton.jit
def _bicubic_kernel(
    x,
    out,
    total,
    H,
    W,
    OH,
    OW,
    sh,
    sh_lo,
    sw,
    sw_lo,
    ALIGN: tl.constexpr,
    BACKWARD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Forward: out[e] from x.  Backward: x is grad_output (by output element),
    # out the float32 (float64) accumulator of grad_input.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, oh, ow = _split3(e, OH, OW)
    ih, th = _cubic_src(oh, sh, sh_lo, H, ALIGN, ACC)
    iw, tw = _cubic_src(ow, sw, sw_lo, W, ALIGN, ACC)
    h0, h1, h2, h3 = _cubic_weights(th)
    w0, w1, w2, w3 = _cubic_weights(tw)
    c0, c1, c2, c3 = _tap(iw, 0, W), _tap(iw, 1, W), _tap(iw, 2, W), _tap(iw, 3, W)
    base = plane * H * W
    r0 = base + _tap(ih, 0, H) * W
    r1 = base + _tap(ih, 1, H) * W
    r2 = base + _tap(ih, 2, H) * W
    r3 = base + _tap(ih, 3, H) * W
    if BACKWARD:
        g = tl.load(x + e, mask=mask, other=0).to(ACC)
        _cubic_spread(out, r0, c0, c1, c2, c3, w0, w1, w2, w3, g * h0, mask)
        _cubic_spread(out, r1, c0, c1, c2, c3, w0, w1, w2, w3, g * h1, mask)
        _cubic_spread(out, r2, c0, c1, c2, c3, w0, w1, w2, w3, g * h2, mask)
        _cubic_spread(out, r3, c0, c1, c2, c3, w0, w1, w2, w3, g * h3, mask)
    else:
        v = (
            _cubic_row(x, r0, c0, c1, c2, c3, w0, w1, w2, w3, mask, ACC) * h0
            + _cubic_row(x, r1, c0, c1, c2, c3, w0, w1, w2, w3, mask, ACC) * h1
            + _cubic_row(x, r2, c0, c1, c2, c3, w0, w1, w2, w3, mask, ACC) * h2
            + _cubic_row(x, r3, c0, c1, c2, c3, w0, w1, w2, w3, mask, ACC) * h3
        )
        if out.dtype.element_ty.is_int():  # uint8 images: clamped, to the nearest
            v = tl.minimum(tl.maximum(v, 0.0), 255.0) + 0.5
        _store(out, e, v, mask)


def _bicubic_args(in_shape, out_shape, align_corners, scales_h, scales_w):
    """H, W, OH, OW and the two scales (float32 hi and lo parts each)."""
    _, H, W, _, OH, OW, _, _, *scales = _linear_args(
        in_shape, out_shape, align_corners, (scales_h, scales_w), size_rule=False
    )
    return (H, W, OH, OW, *scales)


@kernel("upsample_bicubic2d")
def upsample_bicubic2d_out(self, output_size, align_corners, scales_h, scales_w, out):
    x = _contiguous(self)
    total = out.numel()
    if total == 0:
        return
    o_t = _dense(out)
    grid, block = _grid(total)
    launch(
        _bicubic_kernel,
        grid,
        x,
        o_t,
        total,
        *_bicubic_args(x.shape, out.shape, align_corners, scales_h, scales_w),
        ALIGN=bool(align_corners),
        BACKWARD=False,
        ACC=_tl_acc(x.dtype),
        BLOCK=block,
    )
    _write_back(out, o_t)


@kernel("upsample_bicubic2d_backward")
def upsample_bicubic2d_backward_out(
    grad_output, output_size, input_size, align_corners, scales_h, scales_w, grad_input
):
    g = _contiguous(grad_output)
    acc = _accumulator(grad_input)
    total = g.numel()
    if total:
        grid, block = _grid(total)
        launch(
            _bicubic_kernel,
            grid,
            g,
            acc,
            total,
            *_bicubic_args(grad_input.shape, g.shape, align_corners, scales_h, scales_w),
            ALIGN=bool(align_corners),
            BACKWARD=True,
            ACC=_tl_acc(acc.dtype),
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


# -- antialiased interpolation, 2-d (structured impls): F.interpolate(antialias=True) --
#   _upsample_{bilinear,bicubic}2d_aa.out impl:
#       (self, output_size, align_corners, scales_h, scales_w, out)
#   their _backward.grad_input impls:
#       (grad_output, output_size, input_size, align_corners, scales_h, scales_w, grad_input)
# PyTorch's separable filter (UpSampleKernel / upsample_antialias): per dim,
# scale as linear's (out == in copies: PyTorch's CPU forward skips such a
# dim, its backward does not and is not the forward's adjoint there; ours
# is), support = size/2 * max(scale, 1),
# center = scale * (o + 0.5), taps [max(int(center - support + 0.5), 0),
# min(int(center + support + 0.5), I)), weight filter((i - center + 0.5) /
# max(scale, 1)) normalised to sum 1; filter the triangle (bilinear) or Keys'
# cubic with a = -0.5 (bicubic).


@triton.jit
def _aa_filter(x, CUBIC: tl.constexpr):
    x = tl.abs(x)
    if CUBIC:
        a = -0.5
        w = tl.where(
            x < 1.0,
            ((a + 2) * x - (a + 3)) * x * x + 1,
            tl.where(x < 2.0, (((x - 5) * x + 8) * x - 4) * a, 0.0),
        )
    else:
        w = tl.where(x < 1.0, 1 - x, 0.0)
    return w


@triton.jit
def _aa_span(o, scale_hi, scale_lo, support, size, ACC: tl.constexpr):
    of = o.to(ACC)
    scale = tl.zeros_like(of) + scale_hi
    if ACC == tl.float64:
        scale = scale + scale_lo
    center = scale * (of + 0.5)
    lo = tl.maximum((center - support + 0.5).to(tl.int64), 0)
    hi = tl.minimum((center + support + 0.5).to(tl.int64), size)
    inv = 1.0 / tl.maximum(scale, 1.0)
    return lo, hi, center, inv


@triton.jit
def _aa_total(lo, hi, center, inv, K, CUBIC: tl.constexpr, ACC: tl.constexpr):
    t = tl.zeros(center.shape, ACC)
    for k in range(0, K):
        w = _aa_filter(((lo + k).to(ACC) - center + 0.5) * inv, CUBIC)
        t += tl.where(lo + k < hi, w, 0.0)
    return tl.where(t != 0, t, 1.0)


@triton.jit
def _aa_kernel(
    x,
    out,
    total,
    H,
    W,
    OH,
    OW,
    sh,
    sh_lo,
    sw,
    sw_lo,
    sup_h,
    sup_w,
    KH,
    KW,
    CUBIC: tl.constexpr,
    BACKWARD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Forward: out[e] from x.  Backward: x is grad_output (by output element),
    # out the float32 (float64) accumulator of grad_input.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, oh, ow = _split3(e, OH, OW)
    y0, y1, cy, iy = _aa_span(oh, sh, sh_lo, sup_h, H, ACC)
    x0, x1, cx, ix = _aa_span(ow, sw, sw_lo, sup_w, W, ACC)
    norm = _aa_total(y0, y1, cy, iy, KH, CUBIC, ACC) * _aa_total(x0, x1, cx, ix, KW, CUBIC, ACC)
    base = plane * H * W
    if BACKWARD:
        g = tl.load(x + e, mask=mask, other=0).to(ACC) / norm
    else:
        v = tl.zeros((BLOCK,), ACC)
    for j in range(0, KH):
        yy = y0 + j
        wy = _aa_filter((yy.to(ACC) - cy + 0.5) * iy, CUBIC)
        for i in range(0, KW):
            xx = x0 + i
            ok = mask & (yy < y1) & (xx < x1)
            w = wy * _aa_filter((xx.to(ACC) - cx + 0.5) * ix, CUBIC)
            if BACKWARD:
                tl.atomic_add(out + base + yy * W + xx, g * w, mask=ok)
            else:
                v += tl.load(x + base + yy * W + xx, mask=ok, other=0).to(ACC) * w
    if not BACKWARD:
        v = v / norm
        if out.dtype.element_ty.is_int():  # uint8 images: clamped, to the nearest
            v = tl.minimum(tl.maximum(v, 0.0), 255.0) + 0.5
        _store(out, e, v, mask)


def _aa_args(in_shape, out_shape, align_corners, scales_h, scales_w, cubic):
    """H, W, OH, OW, the scales (float32 hi, lo), supports and longest windows."""
    # out == in: scale 1, the identity (PyTorch's CPU forward skips such a dim)
    _, H, W, _, OH, OW, _, _, sh, sh_lo, sw, sw_lo = _linear_args(
        in_shape, out_shape, align_corners, (scales_h, scales_w)
    )
    half = 2.0 if cubic else 1.0  # interp_size / 2
    sup_h, sup_w = half * max(sh + sh_lo, 1.0), half * max(sw + sw_lo, 1.0)
    KH, KW = min(H, math.ceil(2 * sup_h) + 2), min(W, math.ceil(2 * sup_w) + 2)
    return H, W, OH, OW, sh, sh_lo, sw, sw_lo, sup_h, sup_w, KH, KW


def _aa_fns(cubic):
    def forward_out(self, output_size, align_corners, scales_h, scales_w, out):
        x = _contiguous(self)
        total = out.numel()
        if total == 0:
            return
        o_t = _dense(out)
        grid, block = _grid(total)
        launch(
            _aa_kernel,
            grid,
            x,
            o_t,
            total,
            *_aa_args(x.shape, out.shape, align_corners, scales_h, scales_w, cubic),
            CUBIC=cubic,
            BACKWARD=False,
            ACC=_tl_acc(x.dtype),
            BLOCK=block,
        )
        _write_back(out, o_t)

    def backward_out(
        grad_output, output_size, input_size, align_corners, scales_h, scales_w, grad_input
    ):
        g = _contiguous(grad_output)
        acc = _accumulator(grad_input)
        total = g.numel()
        if total:
            grid, block = _grid(total)
            launch(
                _aa_kernel,
                grid,
                g,
                acc,
                total,
                *_aa_args(grad_input.shape, g.shape, align_corners, scales_h, scales_w, cubic),
                CUBIC=cubic,
                BACKWARD=True,
                ACC=_tl_acc(acc.dtype),
                BLOCK=block,
            )
        copy_kernel((grad_input,), (acc,))

    return forward_out, backward_out


# -- nearest / nearest-exact, 1-d to 3-d (structured impls) -------------------------
# The kernel of upsample_nearest2d (ops/conv.py upsample_nearest), with
# "nearest-exact"'s half-pixel offset: src = min(floor((o + 0.5) * scale), I-1).
#   upsample_nearest{1,3}d.out impl: (self, output_size, *scales, out)
#   upsample_nearest{1,3}d_backward.grad_input impl:
#       (grad_output, output_size, input_size, *scales, grad_input)
#   _upsample_nearest_exact{1,2,3}d(.out / _backward.grad_input): the same arguments


def _nearest_fns(nsp, exact):
    def forward_out(self, output_size, *scales_and_out):
        *scales, out = scales_and_out
        upsample_nearest(self, out, scales, exact=exact)

    def backward_out(grad_output, output_size, input_size, *scales_and_grad):
        *scales, grad_input = scales_and_grad
        upsample_nearest_backward(grad_output, grad_input, scales, exact=exact)

    return forward_out, backward_out


# -- reflection / replication padding, 1-d to 3-d ---------------------------------
#   reflection_pad{1,3}d.out, replication_pad{1,2,3}d.out impls: (self, padding, out)
#   reflection_pad{1,3}d_backward.grad_input, replication_pad1d_backward.grad_input impls:
#       (grad_output, self, padding, grad_input)                             (structured)
#   reflection_pad2d(self, padding) / .out(self, padding, out)               (plain)
#   reflection_pad2d_backward, replication_pad{2,3}d_backward(grad_output, self, padding)
#       and their .grad_input(..., grad_input)                               (plain)
# Padding lists (left, right, top, bottom, front, back).  Output o of a
# dimension padded by (before, after) reads input i = o - before, reflected
# (i < 0: -i; i >= I: 2(I-1) - i) or clamped into [0, I-1]; negative padding
# crops.  The backward adds each grad_output element into its source.


@triton.jit
def _pad_src(o, before, size, REFLECT: tl.constexpr):
    i = o - before
    if REFLECT:
        i = tl.where(i < 0, -i, i)
        i = tl.where(i >= size, 2 * (size - 1) - i, i)
    else:
        i = tl.minimum(tl.maximum(i, 0), size - 1)
    return i


@triton.jit
def _pad_kernel(
    x,
    out,
    total,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    front,
    top,
    left,
    REFLECT: tl.constexpr,
    BACKWARD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = _split4(e, OD, OH, OW)
    src = (
        (plane * D + _pad_src(od, front, D, REFLECT)) * H + _pad_src(oh, top, H, REFLECT)
    ) * W + _pad_src(ow, left, W, REFLECT)
    if BACKWARD:  # x: grad_output (by output element), out: float32/64 grad_input
        v = tl.load(x + e, mask=mask, other=0).to(out.dtype.element_ty)
        tl.atomic_add(out + src, v, mask=mask)
    else:
        tl.store(out + e, tl.load(x + src, mask=mask, other=0), mask=mask)


def _pad_args(in_shape, out_shape, padding):
    """(D, H, W, OD, OH, OW, front, top, left) of a padding of len(padding)//2 dims."""
    nsp = len(padding) // 2
    p = [int(v) for v in padding] + [0] * (6 - len(padding))
    return (*_spatial3(in_shape, nsp), *_spatial3(out_shape, nsp), p[4], p[2], p[0])


def _padded_shape(shape, padding):
    nsp = len(padding) // 2
    lead = list(shape[: len(shape) - nsp])
    # padding runs from the last dim: (left, right) of W first
    sp = [shape[len(shape) - 1 - k] + padding[2 * k] + padding[2 * k + 1] for k in range(nsp)]
    return lead + sp[::-1]


def _pad(self, padding, out, reflect):
    x = _contiguous(self)
    total = out.numel()
    if total == 0:
        return
    o_t = _dense(out)
    grid, block = _grid(total)
    launch(
        _pad_kernel,
        grid,
        x,
        o_t,
        total,
        *_pad_args(x.shape, out.shape, padding),
        REFLECT=reflect,
        BACKWARD=False,
        BLOCK=block,
    )
    _write_back(out, o_t)


def _pad_backward(grad_output, padding, grad_input, reflect):
    g = _contiguous(grad_output)
    acc = _accumulator(grad_input)
    total = g.numel()
    if total:
        grid, block = _grid(total)
        launch(
            _pad_kernel,
            grid,
            g,
            acc,
            total,
            *_pad_args(grad_input.shape, g.shape, padding),
            REFLECT=reflect,
            BACKWARD=True,
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


def _check_pad(name, x, padding, nsp, reflect):
    """PyTorch's checks of a plain padding op (its meta's for the structured ones)."""
    if len(padding) != 2 * nsp:
        raise RuntimeError(f"{name}: padding size is expected to be {2 * nsp}, got {len(padding)}")
    if not (
        x.dim() in (nsp + 1, nsp + 2)
        and all(s != 0 for s in (x.shape if x.dim() == nsp + 1 else x.shape[1:]))
    ):
        raise RuntimeError(
            f"{name}: Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor with "
            "possibly 0 batch size and other non-zero dimensions for input, but got: "
            f"{list(x.shape)}"
        )
    for k in range(nsp):
        d = x.dim() - 1 - k
        before, after = padding[2 * k], padding[2 * k + 1]
        if reflect and not (before < x.shape[d] and after < x.shape[d]):
            raise RuntimeError(
                f"{name}: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({before}, {after}) at dimension {d} "
                f"of input {list(x.shape)}"
            )
    out = _padded_shape(x.shape, padding)
    if any(o < 1 for o in out[x.dim() - nsp :]):
        raise RuntimeError(
            f"{name}: input {list(x.shape)} is too small for padding "
            f"{list(padding)}: calculated output {out}"
        )


def _check_pad_grad(name, grad_output, x, padding):
    expected = _padded_shape(x.shape, padding)
    if list(grad_output.shape) != expected:
        raise RuntimeError(
            f"{name}: grad_output of shape {list(grad_output.shape)} does not match "
            f"the padded input's shape {expected}"
        )
    if grad_output.dtype != x.dtype:
        raise RuntimeError(
            f"{name}: expected dtype {x.dtype} for `grad_output` but got dtype {grad_output.dtype}"
        )


@kernel()
def reflection_pad2d_out(self, padding, out):
    _check_pad("reflection_pad2d", self, padding, 2, True)
    out.resize_(_padded_shape(self.shape, padding))  # a plain out= op sizes its own out
    _pad(self, padding, out, True)
    return out


@kernel()
def reflection_pad2d(self, padding):
    _check_pad("reflection_pad2d", self, padding, 2, True)
    out = torch.empty(_padded_shape(self.shape, padding), dtype=self.dtype, device=self.device)
    _pad(self, padding, out, True)
    return out


def _plain_pad_backward_fns(name, nsp, reflect):
    def backward(grad_output, self, padding):
        _check_pad(name, self, padding, nsp, reflect)
        _check_pad_grad(name, grad_output, self, padding)
        grad_input = torch.empty(self.shape, dtype=self.dtype, device=self.device)
        _pad_backward(grad_output, padding, grad_input, reflect)
        return grad_input

    def backward_out(grad_output, self, padding, grad_input):
        _check_pad(name, self, padding, nsp, reflect)
        _check_pad_grad(name, grad_output, self, padding)
        grad_input.resize_(self.shape)  # a plain out= op sizes its own out
        _pad_backward(grad_output, padding, grad_input, reflect)
        return grad_input

    return backward, backward_out


def _structured_pad_fns(reflect):
    def forward_out(self, padding, out):
        _pad(self, padding, out, reflect)

    def backward_out(grad_output, self, padding, grad_input):
        _pad_backward(grad_output, padding, grad_input, reflect)

    return forward_out, backward_out


# -- grid sampling, 3-d (plain ops): F.grid_sample on 5-d inputs ----------------
#   grid_sampler_3d(input (N, C, D, H, W), grid (N, OD, OH, OW, 3), interpolation_mode,
#                   padding_mode, align_corners) -> out
#   grid_sampler_3d_backward(grad_output, input, grid, interpolation_mode, padding_mode,
#                            align_corners, output_mask) -> (grad_input?, grad_grid)
# interpolation 0 trilinear, 1 nearest (round half to even); padding 0 zeros,
# 1 border, 2 reflection (ATen/native/GridSampler.h); grid's last dim is
# (x, y, z) -> (W, H, D).  Coordinates in float32 (float64 for float64).  The
# forward runs one program per block of output elements; the backward one per
# block of grid points, looping over the channels: grad_grid sums them,
# grad_input takes float32 atomics.  Source coordinates (unnormalise, pad, and
# their derivative) are grid_sample.py's, shared with grid_sampler_2d.


def _check_grid_common(input, grid, interpolation_mode, padding_mode):
    nsp = input.dim() - 2
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got "
            f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != nsp:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nsp} in last dimension, but "
            f"got grid with sizes {list(grid.shape)}"
        )
    for d in range(2, input.dim()):
        if input.shape[d] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, "
                f"but input has sizes {list(input.shape)} with dimension {d} being empty"
            )
    if input.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have the input's dtype {input.dtype}, "
            f"but got {grid.dtype}"
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"grid_sampler(): expected a floating point input, got {input.dtype}")
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise RuntimeError(
            f"grid_sampler(): unknown interpolation mode {interpolation_mode} or "
            f"padding mode {padding_mode}"
        )


@triton.jit
def _corner(b: tl.constexpr, d):
    """Weight of the lower (b = 0) or upper (b = 1) tap at fraction d, and its slope."""
    if b == 1:
        return d, 1.0
    return 1 - d, -1.0


@triton.jit
def _grid_coords3(
    grid, p, D, H, W, PADDING: tl.constexpr, ALIGN: tl.constexpr, ACC: tl.constexpr, mask
):
    gx = tl.load(grid + 3 * p, mask=mask, other=0).to(ACC)
    gy = tl.load(grid + 3 * p + 1, mask=mask, other=0).to(ACC)
    gz = tl.load(grid + 3 * p + 2, mask=mask, other=0).to(ACC)
    ix, dx = _source(gx, W, PADDING, ALIGN)
    iy, dy = _source(gy, H, PADDING, ALIGN)
    iz, dz = _source(gz, D, PADDING, ALIGN)
    return ix, iy, iz, dx, dy, dz


@triton.jit
def _inb3(z, y, x, D, H, W):
    return (z >= 0) & (z < D) & (y >= 0) & (y < H) & (x >= 0) & (x < W)


@triton.jit
def _grid_sample3d_kernel(
    x,
    grid,
    out,
    total,
    C,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    MODE: tl.constexpr,
    PADDING: tl.constexpr,
    ALIGN: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    nc, od, oh, ow = _split4(e, OD, OH, OW)
    n = nc // C
    p = ((n * OD + od) * OH + oh) * OW + ow
    ix, iy, iz, _, _, _ = _grid_coords3(grid, p, D, H, W, PADDING, ALIGN, ACC, mask)
    base = x + nc * D * H * W
    if MODE == 1:
        xn = _rint(ix).to(tl.int64)
        yn = _rint(iy).to(tl.int64)
        zn = _rint(iz).to(tl.int64)
        v = tl.load(
            base + (zn * H + yn) * W + xn, mask=mask & _inb3(zn, yn, xn, D, H, W), other=0
        ).to(ACC)
    else:
        fx = tl.floor(ix)
        fy = tl.floor(iy)
        fz = tl.floor(iz)
        x0 = fx.to(tl.int64)
        y0 = fy.to(tl.int64)
        z0 = fz.to(tl.int64)
        v = tl.zeros((BLOCK,), ACC)
        for k in tl.static_range(8):
            wx, _ = _corner(k & 1, ix - fx)
            wy, _ = _corner((k >> 1) & 1, iy - fy)
            wz, _ = _corner(k >> 2, iz - fz)
            xi = x0 + (k & 1)
            yi = y0 + ((k >> 1) & 1)
            zi = z0 + (k >> 2)
            ok = mask & _inb3(zi, yi, xi, D, H, W)
            v += tl.load(base + (zi * H + yi) * W + xi, mask=ok, other=0).to(ACC) * (wx * wy * wz)
    _store(out, e, v, mask)


@triton.jit
def _grid_sample3d_backward_kernel(
    g,
    x,
    grid,
    gin,
    ggrid,
    total,
    C,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    MODE: tl.constexpr,
    PADDING: tl.constexpr,
    ALIGN: tl.constexpr,
    INPUT_GRAD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # grid points
    mask = p < total
    S = OD * OH * OW
    n = p // S
    s = p % S
    ix, iy, iz, mx, my, mz = _grid_coords3(grid, p, D, H, W, PADDING, ALIGN, ACC, mask)
    gix = tl.zeros((BLOCK,), ACC)
    giy = tl.zeros((BLOCK,), ACC)
    giz = tl.zeros((BLOCK,), ACC)
    if MODE == 1:
        xn = _rint(ix).to(tl.int64)
        yn = _rint(iy).to(tl.int64)
        zn = _rint(iz).to(tl.int64)
        ok = mask & _inb3(zn, yn, xn, D, H, W)
        if INPUT_GRAD:
            for c in range(0, C):
                go = tl.load(g + (n * C + c) * S + s, mask=mask, other=0).to(ACC)
                tl.atomic_add(gin + (n * C + c) * D * H * W + (zn * H + yn) * W + xn, go, mask=ok)
    else:
        fx = tl.floor(ix)
        fy = tl.floor(iy)
        fz = tl.floor(iz)
        x0 = fx.to(tl.int64)
        y0 = fy.to(tl.int64)
        z0 = fz.to(tl.int64)
        for c in range(0, C):
            plane = (n * C + c) * D * H * W
            go = tl.load(g + (n * C + c) * S + s, mask=mask, other=0).to(ACC)
            for k in tl.static_range(8):
                wx, sx = _corner(k & 1, ix - fx)
                wy, sy = _corner((k >> 1) & 1, iy - fy)
                wz, sz = _corner(k >> 2, iz - fz)
                xi = x0 + (k & 1)
                yi = y0 + ((k >> 1) & 1)
                zi = z0 + (k >> 2)
                ok = mask & _inb3(zi, yi, xi, D, H, W)
                a = plane + (zi * H + yi) * W + xi
                if INPUT_GRAD:
                    tl.atomic_add(gin + a, go * (wx * wy * wz), mask=ok)
                v = tl.load(x + a, mask=ok, other=0).to(ACC) * go
                gix += v * (sx * wy * wz)
                giy += v * (wx * sy * wz)
                giz += v * (wx * wy * sz)
    _store(ggrid, 3 * p, gix * mx, mask)
    _store(ggrid, 3 * p + 1, giy * my, mask)
    _store(ggrid, 3 * p + 2, giz * mz, mask)


def _check_grid_sampler3d(input, grid, interpolation_mode, padding_mode):
    if input.dim() != 5 or grid.dim() != 5:
        raise RuntimeError(
            "grid_sampler(): expected 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(input.shape)} and grid with sizes "
            f"{list(grid.shape)}"
        )
    if interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    _check_grid_common(input, grid, interpolation_mode, padding_mode)


@kernel()
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    _check_grid_sampler3d(input, grid, interpolation_mode, padding_mode)
    x, gr = _contiguous(input), _contiguous(grid)
    N, C, D, H, W = x.shape
    OD, OH, OW = gr.shape[1:4]
    out = torch.empty((N, C, OD, OH, OW), dtype=x.dtype, device=x.device)
    total = out.numel()
    if total:
        grid_, block = _grid(total)
        launch(
            _grid_sample3d_kernel,
            grid_,
            x,
            gr,
            out,
            total,
            C,
            D,
            H,
            W,
            OD,
            OH,
            OW,
            MODE=int(interpolation_mode),
            PADDING=int(padding_mode),
            ALIGN=bool(align_corners),
            ACC=_tl_acc(x.dtype),
            BLOCK=block,
        )
    return out


@kernel()
def grid_sampler_3d_backward(
    grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask
):
    _check_grid_sampler3d(input, grid, interpolation_mode, padding_mode)
    x, gr, g = _contiguous(input), _contiguous(grid), _contiguous(grad_output)
    N, C, D, H, W = x.shape
    OD, OH, OW = gr.shape[1:4]
    if list(g.shape) != [N, C, OD, OH, OW]:
        raise RuntimeError(
            f"grid_sampler_3d_backward(): grad_output of shape {list(g.shape)}, "
            f"expected {[N, C, OD, OH, OW]}"
        )
    want_input = bool(output_mask[0])
    acc = _accumulator(x) if want_input else None
    ggrid = torch.empty(gr.shape, dtype=gr.dtype, device=gr.device)
    total = N * OD * OH * OW
    if total:
        grid_, block = _grid(total)
        launch(
            _grid_sample3d_backward_kernel,
            grid_,
            g,
            x,
            gr,
            acc if want_input else x,
            ggrid,
            total,
            C,
            D,
            H,
            W,
            OD,
            OH,
            OW,
            MODE=int(interpolation_mode),
            PADDING=int(padding_mode),
            ALIGN=bool(align_corners),
            INPUT_GRAD=want_input,
            ACC=_tl_acc(x.dtype),
            BLOCK=block,
        )
    grad_input = None
    if want_input:
        grad_input = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        copy_kernel((grad_input,), (acc,))
    return grad_input, ggrid


# -- im2col / col2im (plain ops): F.unfold / F.fold ------------------------------
#   im2col(self, kernel_size, dilation, padding, stride) -> (N, C*kh*kw, L)
#   col2im(self, output_size, kernel_size, dilation, padding, stride) -> (N, C, H, W)
#   and their .out(..., out); a batch of one may come without its batch dim.
# The kernels are the convolutions' (ops/conv.py _im2col / _col2im).


def _blocks(size, pad, dil, k, stride):
    return (size + 2 * pad - (dil * (k - 1) + 1)) // stride + 1


def _check_window(kernel_size, dilation, padding, stride, stride_first):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    if not (kw > 0 and kh > 0):
        raise RuntimeError(
            f"kernel size should be greater than zero, but got kernel_height: {kh} "
            f"kernel_width: {kw}"
        )
    checks = [
        (
            sw > 0 and sh > 0,
            f"stride should be greater than zero, but got stride_height: {sh} stride_width: {sw}",
        ),
        (
            dw > 0 and dh > 0,
            f"dilation should be greater than zero, but got dilation_height: {dh} "
            f"dilation_width: {dw}",
        ),
        (
            pw >= 0 and ph >= 0,
            f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}",
        ),
    ]
    if not stride_first:  # im2col checks stride last
        checks = checks[1:] + checks[:1]
    for ok, msg in checks:
        if not ok:
            raise RuntimeError(msg)


def _im2col_shape(self, kernel_size, dilation, padding, stride):
    _check_window(kernel_size, dilation, padding, stride, False)
    x = self
    if not (
        (x.dim() == 3 and x.shape[0] != 0 and x.shape[1] != 0 and x.shape[2] != 0)
        or (x.dim() == 4 and x.shape[1] != 0 and x.shape[2] != 0 and x.shape[3] != 0)
    ):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(x.shape)}"
        )
    H, W = x.shape[-2:]
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    OH, OW = _blocks(H, ph, dh, kh, sh), _blocks(W, pw, dw, kw, sw)
    if OH < 1 or OW < 1:
        raise RuntimeError(
            f"Given input with spatial size ({H}, {W}), kernel_size=({kh}, {kw}), "
            f"dilation=({dh}, {dw}), padding=({ph}, {pw}), calculated shape of the "
            f"array of sliding blocks as ({OH}, {OW}), but its components must be at "
            "least one."
        )
    return OH, OW


def _im2col_into(self, kernel_size, dilation, padding, stride, grid):
    x = self if self.dim() == 4 else self.unsqueeze(0)
    cols = _im2col(x, list(grid), list(kernel_size), list(stride), list(padding), list(dilation))
    return cols if self.dim() == 4 else cols.squeeze(0)


@kernel()
def im2col(self, kernel_size, dilation, padding, stride):
    grid = _im2col_shape(self, kernel_size, dilation, padding, stride)
    return _im2col_into(self, kernel_size, dilation, padding, stride, grid)


@kernel()
def im2col_out(self, kernel_size, dilation, padding, stride, out):
    cols = im2col(self, kernel_size, dilation, padding, stride)
    out.resize_(cols.shape)  # a plain out= op sizes its own out
    copy_kernel((out,), (cols,))
    return out


def _col2im_check(self, output_size, kernel_size, dilation, padding, stride):
    _check_window(kernel_size, dilation, padding, stride, True)
    x = self
    if not (
        (x.dim() == 2 and x.shape[0] != 0 and x.shape[1] != 0)
        or (x.dim() == 3 and x.shape[1] != 0 and x.shape[2] != 0)
    ):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch "
            f"size and non-zero dimensions for input, but got: {list(x.shape)}"
        )
    (H, W), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (
        output_size,
        kernel_size,
        dilation,
        padding,
        stride,
    )
    planes, length = x.shape[-2:]
    if planes % (kh * kw) != 0:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={planes} and kernel_size=({kh}, {kw})."
        )
    bh, bw = _blocks(H, ph, dh, kh, sh), _blocks(W, pw, dw, kw, sw)
    desc = (
        f"Given output_size=({H}, {W}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), "
        f"padding=({ph}, {pw}), stride=({sh}, {sw}), "
    )
    if length != bh * bw:
        raise RuntimeError(
            desc + "expected size of input's dimension 2 to match the calculated "
            f"number of sliding blocks {bh} * {bw} = {bh * bw}, but got "
            f"input.size(2)={length}."
        )
    if bh < 1 or bw < 1:
        raise RuntimeError(
            desc + f"calculated shape of the array of sliding blocks as ({bh}, {bw}), "
            "which is too small (non-positive)"
        )
    if H < 1 or W < 1:
        raise RuntimeError(
            f"Expected output spatial size to be positive, but got: output_size=({H}, {W})."
        )
    return (bh, bw), planes // (kh * kw)


@kernel()
def col2im(self, output_size, kernel_size, dilation, padding, stride):
    if not (self.dtype.is_floating_point or self.dtype == torch.bool):
        # as PyTorch's kernels (sums of integers would round through float32 here)
        raise NotImplementedError(f'"col2im" not implemented for {self.dtype}')
    grid, C = _col2im_check(self, output_size, kernel_size, dilation, padding, stride)
    cols = self if self.dim() == 3 else self.unsqueeze(0)
    im = _col2im(
        cols,
        C,
        list(output_size),
        list(grid),
        list(kernel_size),
        list(stride),
        list(padding),
        list(dilation),
        self.dtype,
    )
    return im if self.dim() == 3 else im.squeeze(0)


@kernel()
def col2im_out(self, output_size, kernel_size, dilation, padding, stride, out):
    im = col2im(self, output_size, kernel_size, dilation, padding, stride)
    out.resize_(im.shape)  # a plain out= op sizes its own out
    copy_kernel((out,), (im,))
    return out


# -- 3-d max and average pooling ------------------------------------------------
#   max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
#       -> (out, indices)  (plain; indices into each (D, H, W) volume)
#   max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
#       dilation, ceil_mode, indices) -> grad_input  (plain)
#   avg_pool3d.out impl: (self, kernel_size, stride, padding, ceil_mode,
#       count_include_pad, divisor_override, out)  (structured: PyTorch's meta sizes out)
#   avg_pool3d_backward.grad_input impl: (grad_output, self, kernel_size, stride, padding,
#       ceil_mode, count_include_pad, divisor_override, grad_input)
# One lane per output element, looping over its window; the backward scatters
# with float32 atomics. Window rules as PyTorch's (a value replaces the maximum
# when greater or NaN; average divisor: the override, or the window clipped to
# the padded input, or to the input without count_include_pad).


def _triple(v, default=None):
    v = list(v) if v is not None else []
    if not v:
        return list(default)
    return v * 3 if len(v) == 1 else v


def _pool3_params(self, kernel_size, stride, padding, dilation, name):
    if self.dim() not in (4, 5):
        raise RuntimeError(
            f"{name}: Expected 4D or 5D tensor for input, but got: {list(self.shape)}"
        )
    k = _triple(kernel_size)
    s = _triple(stride, k)
    p = _triple(padding)
    d = _triple(dilation, [1, 1, 1])
    if len(k) != 3 or len(s) != 3 or len(p) != 3 or len(d) != 3:
        raise RuntimeError(
            f"{name}: kernel_size, stride, padding and dilation must be one int or "
            f"a tuple of three ints"
        )
    if min(k) <= 0 or min(s) <= 0 or min(d) <= 0:
        raise RuntimeError(
            f"{name}: kernel size, stride and dilation should be greater than zero, "
            f"but got kernel {k}, stride {s}, dilation {d}"
        )
    for kk, pp in zip(k, p):
        if pp < 0 or pp > kk // 2:
            raise RuntimeError(
                f"{name}: pad should be at most half of effective kernel size, but "
                f"got pad={pp}, kernel_size={kk}"
            )
    return k, s, p, d


def _pool_out(size, k, s, p, d, ceil_mode):
    n = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = n // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


@triton.jit
def _max_pool3d_kernel(
    x,
    out,
    idx,
    g,
    gin,
    total,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    KD,
    KH,
    KW,
    sd,
    sh,
    sw,
    pd,
    ph,
    pw,
    dd,
    dh,
    dw,
    BACKWARD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = _split4(e, OD, OH, OW)
    vol = plane * D * H * W
    if BACKWARD:  # gin[plane, idx[e]] += g[e]
        j = tl.load(idx + e, mask=mask, other=0)
        v = tl.load(g + e, mask=mask, other=0).to(ACC)
        tl.atomic_add(gin + vol + j, v, mask=mask & (j >= 0))
    else:
        best = tl.full((BLOCK,), float("-inf"), ACC)
        bidx = tl.full((BLOCK,), -1, tl.int64)
        for k in range(0, KD * KH * KW):
            i_d = od * sd - pd + (k // (KH * KW)) * dd
            i_h = oh * sh - ph + ((k // KW) % KH) * dh
            i_w = ow * sw - pw + (k % KW) * dw
            ok = mask & (i_d >= 0) & (i_d < D) & (i_h >= 0) & (i_h < H) & (i_w >= 0) & (i_w < W)
            pos = (i_d * H + i_h) * W + i_w
            v = tl.load(x + vol + pos, mask=ok, other=float("-inf")).to(ACC)
            take = ok & ((v > best) | (v != v) | (bidx < 0))  # NaN wins; the first is taken
            best = tl.where(take, v, best)
            bidx = tl.where(take, pos, bidx)
        _store(out, e, best, mask)
        tl.store(idx + e, bidx, mask=mask)


@triton.jit
def _avg_pool3d_kernel(
    x,
    out,
    g,
    gin,
    total,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    KD,
    KH,
    KW,
    sd,
    sh,
    sw,
    pd,
    ph,
    pw,
    divisor,
    COUNT_PAD: tl.constexpr,
    BACKWARD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = _split4(e, OD, OH, OW)
    vol = plane * D * H * W
    d0 = od * sd - pd
    h0 = oh * sh - ph
    w0 = ow * sw - pw
    d1 = tl.minimum(d0 + KD, D + pd)
    h1 = tl.minimum(h0 + KH, H + ph)
    w1 = tl.minimum(w0 + KW, W + pw)
    padded = (d1 - d0) * (h1 - h0) * (w1 - w0)
    cd0 = tl.maximum(d0, 0)
    ch0 = tl.maximum(h0, 0)
    cw0 = tl.maximum(w0, 0)
    cd1 = tl.minimum(d1, D)
    ch1 = tl.minimum(h1, H)
    cw1 = tl.minimum(w1, W)
    if divisor != 0:  # divisor_override (PyTorch takes any non-zero value)
        div = tl.zeros((BLOCK,), ACC) + divisor
    elif COUNT_PAD:
        div = padded.to(ACC)
    else:
        div = ((cd1 - cd0) * (ch1 - ch0) * (cw1 - cw0)).to(ACC)
    div = tl.where(div != 0, div, 1.0)
    if BACKWARD:
        gv = tl.load(g + e, mask=mask, other=0).to(ACC) / div
    acc = tl.zeros((BLOCK,), ACC)
    for k in range(0, KD * KH * KW):
        i_d = cd0 + k // (KH * KW)
        i_h = ch0 + (k // KW) % KH
        i_w = cw0 + k % KW
        ok = mask & (i_d < cd1) & (i_h < ch1) & (i_w < cw1)
        pos = vol + (i_d * H + i_h) * W + i_w
        if BACKWARD:
            tl.atomic_add(gin + pos, gv, mask=ok)
        else:
            acc += tl.load(x + pos, mask=ok, other=0).to(ACC)
    if not BACKWARD:
        _store(out, e, acc / div, mask)


def _volumes(x):
    """x as contiguous (planes, D, H, W) data, and D, H, W."""
    x = _contiguous(x)
    return x, x.shape[-3], x.shape[-2], x.shape[-1]


@kernel()
def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    k, s, p, d = _pool3_params(self, kernel_size, stride, padding, dilation, "max_pool3d")
    x, D, H, W = _volumes(self)
    osz = [
        _pool_out(n, kk, ss, pp, dd_, ceil_mode)
        for n, kk, ss, pp, dd_ in zip((D, H, W), k, s, p, d)
    ]
    if min(osz) < 1:
        raise RuntimeError(
            f"max_pool3d: Given input size {list(self.shape)}, calculated output size "
            f"{osz} is too small"
        )
    shape = [*self.shape[:-3], *osz]
    out = torch.empty(shape, dtype=self.dtype, device=self.device)
    indices = torch.empty(shape, dtype=torch.long, device=self.device)
    total = out.numel()
    if total:
        block = _block(total)
        launch(
            _max_pool3d_kernel,
            (cdiv(total, block),),
            x,
            out,
            indices,
            x,
            x,
            total,
            D,
            H,
            W,
            *osz,
            *k,
            *s,
            *p,
            *d,
            BACKWARD=False,
            ACC=_tl_acc(self.dtype),
            BLOCK=block,
        )
    return out, indices


@kernel()
def max_pool3d_with_indices_out(
    self, kernel_size, stride, padding, dilation, ceil_mode, out, indices
):
    o, i = max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
    for dst, src in ((out, o), (indices, i)):
        dst.resize_(src.shape)
        copy_kernel((dst,), (src,))
    return out, indices


@kernel()
def max_pool3d_with_indices_backward(
    grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices
):
    x, D, H, W = _volumes(self)
    acc = torch.zeros(self.shape, dtype=_acc(self.dtype), device=self.device)
    g = _contiguous(grad_output)
    total = g.numel()
    if total:
        OD, OH, OW = g.shape[-3:]
        block = _block(total)
        launch(
            _max_pool3d_kernel,
            (cdiv(total, block),),
            x,
            x,
            _contiguous(indices),
            g,
            acc,
            total,
            D,
            H,
            W,
            OD,
            OH,
            OW,
            1,
            1,
            1,
            1,
            1,
            1,
            0,
            0,
            0,
            1,
            1,
            1,
            BACKWARD=True,
            ACC=_tl_acc(self.dtype),
            BLOCK=block,
        )
    return acc.to(self.dtype)


@kernel()
def max_pool3d_with_indices_backward_out(
    grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices, grad_input
):
    r = max_pool3d_with_indices_backward(
        grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices
    )
    grad_input.resize_(r.shape)
    copy_kernel((grad_input,), (r,))
    return grad_input


@kernel("avg_pool3d")
def avg_pool3d_out(
    self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, out
):
    """avg_pool3d.out impl (PyTorch's meta has checked the arguments and sized out)."""
    k, s, p, _ = _pool3_params(self, kernel_size, stride, padding, None, "avg_pool3d")
    x, D, H, W = _volumes(self)
    total = out.numel()
    if total == 0:
        return
    o_t = _dense(out)
    block = _block(total)
    launch(
        _avg_pool3d_kernel,
        (cdiv(total, block),),
        x,
        o_t,
        x,
        x,
        total,
        D,
        H,
        W,
        *out.shape[-3:],
        *k,
        *s,
        *p,
        int(divisor_override or 0),
        COUNT_PAD=bool(count_include_pad),
        BACKWARD=False,
        ACC=_tl_acc(self.dtype),
        BLOCK=block,
    )
    _write_back(out, o_t)


@kernel("avg_pool3d_backward")
def avg_pool3d_backward_out(
    grad_output,
    self,
    kernel_size,
    stride,
    padding,
    ceil_mode,
    count_include_pad,
    divisor_override,
    grad_input,
):
    k, s, p, _ = _pool3_params(self, kernel_size, stride, padding, None, "avg_pool3d_backward")
    x, D, H, W = _volumes(self)
    acc = torch.zeros(self.shape, dtype=_acc(self.dtype), device=self.device)
    g = _contiguous(grad_output)
    total = g.numel()
    if total:
        block = _block(total)
        launch(
            _avg_pool3d_kernel,
            (cdiv(total, block),),
            x,
            x,
            g,
            acc,
            total,
            D,
            H,
            W,
            *g.shape[-3:],
            *k,
            *s,
            *p,
            int(divisor_override or 0),
            COUNT_PAD=bool(count_include_pad),
            BACKWARD=True,
            ACC=_tl_acc(self.dtype),
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


# -- kernels made by the factories above: one declaration per manifest name ------------
_avg2, _avg2_out, _avg2_bwd = _adaptive_avg_fns(2)
_avg3, _avg3_out, _avg3_bwd = _adaptive_avg_fns(3)
_max2, _max2_bwd = _adaptive_max_fns(2)
_max3, _max3_bwd = _adaptive_max_fns(3)
kernel("_adaptive_avg_pool2d")(_avg2)
kernel("adaptive_avg_pool2d_out")(_avg2_out)
kernel("_adaptive_avg_pool2d_backward")(_avg2_bwd)
kernel("adaptive_max_pool2d")(_max2)
kernel("adaptive_max_pool2d_backward")(_max2_bwd)
kernel("_adaptive_avg_pool3d")(_avg3)
kernel("adaptive_avg_pool3d_out")(_avg3_out)
kernel("_adaptive_avg_pool3d_backward")(_avg3_bwd)
kernel("adaptive_max_pool3d")(_max3)
kernel("adaptive_max_pool3d_backward")(_max3_bwd)

_bilinear_aa, _bilinear_aa_bwd = _aa_fns(False)
_bicubic_aa, _bicubic_aa_bwd = _aa_fns(True)
kernel("_upsample_bilinear2d_aa")(_bilinear_aa)
kernel("_upsample_bilinear2d_aa_backward")(_bilinear_aa_bwd)
kernel("_upsample_bicubic2d_aa")(_bicubic_aa)
kernel("_upsample_bicubic2d_aa_backward")(_bicubic_aa_bwd)

_near1, _near1_bwd = _nearest_fns(1, False)
_near3, _near3_bwd = _nearest_fns(3, False)
_exact1, _exact1_bwd = _nearest_fns(1, True)
_exact2, _exact2_bwd = _nearest_fns(2, True)
_exact3, _exact3_bwd = _nearest_fns(3, True)
kernel("upsample_nearest1d")(_near1)
kernel("upsample_nearest1d_backward")(_near1_bwd)
kernel("upsample_nearest3d")(_near3)
kernel("upsample_nearest3d_backward")(_near3_bwd)
kernel("_upsample_nearest_exact1d")(_exact1)
kernel("_upsample_nearest_exact1d_backward")(_exact1_bwd)
kernel("_upsample_nearest_exact2d")(_exact2)
kernel("_upsample_nearest_exact2d_backward")(_exact2_bwd)
kernel("_upsample_nearest_exact3d")(_exact3)
kernel("_upsample_nearest_exact3d_backward")(_exact3_bwd)

_refl2_bwd, _refl2_bwd_out = _plain_pad_backward_fns("reflection_pad2d_backward", 2, True)
_repl2_bwd, _repl2_bwd_out = _plain_pad_backward_fns("replication_pad2d_backward", 2, False)
_repl3_bwd, _repl3_bwd_out = _plain_pad_backward_fns("replication_pad3d_backward", 3, False)
kernel("reflection_pad2d_backward")(_refl2_bwd)
kernel("reflection_pad2d_backward_out")(_refl2_bwd_out)
kernel("replication_pad2d_backward")(_repl2_bwd)
kernel("replication_pad2d_backward_out")(_repl2_bwd_out)
kernel("replication_pad3d_backward")(_repl3_bwd)
kernel("replication_pad3d_backward_out")(_repl3_bwd_out)
_refl1, _refl1_bwd = _structured_pad_fns(True)
_refl3, _refl3_bwd = _structured_pad_fns(True)
_repl1, _repl1_bwd = _structured_pad_fns(False)
kernel("reflection_pad1d")(_refl1)
kernel("reflection_pad1d_backward")(_refl1_bwd)
kernel("reflection_pad3d")(_refl3)
kernel("reflection_pad3d_backward")(_refl3_bwd)
kernel("replication_pad1d")(_repl1)
kernel("replication_pad1d_backward")(_repl1_bwd)
kernel("replication_pad2d")(_structured_pad_fns(False)[0])  # backwards: plain, above
kernel("replication_pad3d")(_structured_pad_fns(False)[0])
