"""Linear, bilinear, trilinear and bicubic interpolation (+ backward)."""

import struct
import torch
import triton
import triton.language as tl

from .._common import tl_float_acc
from .._launch import launch
from .._common import dense_out, spatial3, split3, split4, store_masked, write_back
from ..copy import copy_kernel
from .._common import contiguous
from .._declare import kernel
from .._common import zeroed_accumulator, grid_for, alert_not_deterministic

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
    plane, od, oh, ow = split4(e, OD, OH, OW)
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
        store_masked(out, e, v, mask)


def _split_f64(v):
    """v as float32 hi + lo (the kernel adds them in float64 for float64 data)."""
    hi = struct.unpack("f", struct.pack("f", v))[0]
    return hi, v - hi


def _linear_args(in_shape, out_shape, align_corners, scales, size_rule=True):
    nsp = len(scales)
    i, o = spatial3(in_shape, nsp), spatial3(out_shape, nsp)
    s = [
        _split_f64(float(_linear_scale(a, b, align_corners, c, size_rule)))
        for a, b, c in zip(i, o, [None] * (3 - nsp) + list(scales))
    ]
    return (*i, *o, *(part for pair in s for part in pair))


def _upsample_linear(self, out, align_corners, scales):
    x = contiguous(self)
    total = out.numel()
    if total == 0:
        return
    o_t = dense_out(out)
    grid, block = grid_for(total)
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
        ACC=tl_float_acc(x.dtype),
        BLOCK=block,
    )
    write_back(out, o_t)


def _upsample_linear_backward(grad_output, grad_input, align_corners, scales):
    names = {1: "upsample_linear1d", 2: "upsample_bilinear2d", 3: "upsample_trilinear3d"}
    alert_not_deterministic(f"{names[len(scales)]}_backward_out_privateuseone")
    g = contiguous(grad_output)
    acc = zeroed_accumulator(grad_input)
    total = g.numel()
    if total:
        grid, block = grid_for(total)
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
            ACC=tl_float_acc(acc.dtype),
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


@kernel("upsample_linear1d")
def upsample_linear1d_out(
    self: torch.Tensor,
    output_size: list[int],
    align_corners: bool,
    scales: float | None,
    out: torch.Tensor,
) -> None:
    _upsample_linear(self, out, align_corners, (scales,))


@kernel("upsample_linear1d_backward")
def upsample_linear1d_backward_out(
    grad_output: torch.Tensor,
    output_size: list[int],
    input_size: list[int],
    align_corners: bool,
    scales: float | None,
    grad_input: torch.Tensor,
) -> None:
    _upsample_linear_backward(grad_output, grad_input, align_corners, (scales,))


@kernel("upsample_bilinear2d")
def upsample_bilinear2d_out(
    self: torch.Tensor,
    output_size: list[int],
    align_corners: bool,
    scales_h: float | None,
    scales_w: float | None,
    out: torch.Tensor,
) -> None:
    _upsample_linear(self, out, align_corners, (scales_h, scales_w))


@kernel("upsample_bilinear2d_backward")
def upsample_bilinear2d_backward_out(
    grad_output: torch.Tensor,
    output_size: list[int],
    input_size: list[int],
    align_corners: bool,
    scales_h: float | None,
    scales_w: float | None,
    grad_input: torch.Tensor,
) -> None:
    _upsample_linear_backward(grad_output, grad_input, align_corners, (scales_h, scales_w))


@kernel("upsample_trilinear3d")
def upsample_trilinear3d_out(
    self: torch.Tensor,
    output_size: list[int],
    align_corners: bool,
    scales_d: float | None,
    scales_h: float | None,
    scales_w: float | None,
    out: torch.Tensor,
) -> None:
    _upsample_linear(self, out, align_corners, (scales_d, scales_h, scales_w))


@kernel("upsample_trilinear3d_backward")
def upsample_trilinear3d_backward_out(
    grad_output: torch.Tensor,
    output_size: list[int],
    input_size: list[int],
    align_corners: bool,
    scales_d: float | None,
    scales_h: float | None,
    scales_w: float | None,
    grad_input: torch.Tensor,
) -> None:
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
    plane, oh, ow = split3(e, OH, OW)
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
        store_masked(out, e, v, mask)


def _bicubic_args(in_shape, out_shape, align_corners, scales_h, scales_w):
    """H, W, OH, OW and the two scales (float32 hi and lo parts each)."""
    _, H, W, _, OH, OW, _, _, *scales = _linear_args(
        in_shape, out_shape, align_corners, (scales_h, scales_w), size_rule=False
    )
    return (H, W, OH, OW, *scales)


@kernel("upsample_bicubic2d")
def upsample_bicubic2d_out(
    self: torch.Tensor,
    output_size: list[int],
    align_corners: bool,
    scales_h: float | None,
    scales_w: float | None,
    out: torch.Tensor,
) -> None:
    x = contiguous(self)
    total = out.numel()
    if total == 0:
        return
    o_t = dense_out(out)
    grid, block = grid_for(total)
    launch(
        _bicubic_kernel,
        grid,
        x,
        o_t,
        total,
        *_bicubic_args(x.shape, out.shape, align_corners, scales_h, scales_w),
        ALIGN=bool(align_corners),
        BACKWARD=False,
        ACC=tl_float_acc(x.dtype),
        BLOCK=block,
    )
    write_back(out, o_t)


@kernel("upsample_bicubic2d_backward")
def upsample_bicubic2d_backward_out(
    grad_output: torch.Tensor,
    output_size: list[int],
    input_size: list[int],
    align_corners: bool,
    scales_h: float | None,
    scales_w: float | None,
    grad_input: torch.Tensor,
) -> None:
    alert_not_deterministic("upsample_bicubic2d_backward_out_privateuseone")
    g = contiguous(grad_output)
    acc = zeroed_accumulator(grad_input)
    total = g.numel()
    if total:
        grid, block = grid_for(total)
        launch(
            _bicubic_kernel,
            grid,
            g,
            acc,
            total,
            *_bicubic_args(grad_input.shape, g.shape, align_corners, scales_h, scales_w),
            ALIGN=bool(align_corners),
            BACKWARD=True,
            ACC=tl_float_acc(acc.dtype),
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))
