"""Spatial ops on N-C-spatial tensors: adaptive pooling, interpolation
(linear/bilinear/nearest/nearest-exact), reflection/replication padding, im2col/col2im.

Every kernel runs one program per block of output elements (int64 offsets),
on planes: a contiguous (N*C, H, W) view of the input, a 1-d op as one row
(H = 1).  Sums accumulate in float32 (float64 for float64 tensors); the
backward kernels that scatter (interpolation, padding) add with float32
atomics into a temporary that is cast into grad_input once.

Conventions (see ops/__init__.py): (2) structured impls get the impl's
arguments and the outputs sized by PyTorch's meta function, which has checked
the arguments; (3) plain ops check their arguments here, as PyTorch's CPU
kernels do, and return (or fill) the result.
"""
import math

import torch
import triton
import triton.language as tl

from ._launch import cdiv, launch
from .conv import (_col2im, _dense, _im2col, _rows, _split3, _store, _write_back, upsample_nearest,
                   upsample_nearest_backward)
from .copy import copy_kernel, fill_
from .index import _block, _gather_scatter
from .reduction import _contiguous

KERNELS = {}


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


# -- adaptive pooling, 2-d ----------------------------------------------------
#   _adaptive_avg_pool2d(self, output_size) -> out                     (plain)
#   _adaptive_avg_pool2d_backward(grad_output, self) -> grad_input     (plain)
#   adaptive_avg_pool2d.out(self, output_size, out)                    (plain)
#   adaptive_max_pool2d.out impl: (self, output_size, out, indices)   (structured)
#   adaptive_max_pool2d_backward.grad_input impl: (grad_output, self, indices, grad_input)
# Output o pools input rows [floor(o*I/O), ceil((o+1)*I/O)); input row i lies
# in the windows of outputs [floor(i*O/I), ceil((i+1)*O/I)) (the same
# bounds, roles swapped), which the backward gathers.

@triton.jit
def _window(o, I, O):
    return (o * I) // O, ((o + 1) * I + O - 1) // O


def _max_window(I, O):
    """The longest window of an adaptive pool from I to O (a loop bound)."""
    return min(I, cdiv(I, O) + 1) if O else 0


@triton.jit
def _adaptive_avg_kernel(x, out, total, H, W, OH, OW, KH, KW, ACC: tl.constexpr,
                         BLOCK: tl.constexpr):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, oh, ow = _split3(e, OH, OW)
    hs, he = _window(oh, H, OH)
    ws, we = _window(ow, W, OW)
    base = plane * H * W
    acc = tl.zeros((BLOCK,), ACC)
    for kh in range(0, KH):
        ih = hs + kh
        for kw in range(0, KW):
            iw = ws + kw
            ok = mask & (ih < he) & (iw < we)
            acc += tl.load(x + base + ih * W + iw, mask=ok, other=0).to(ACC)
    _store(out, e, acc / ((he - hs) * (we - ws)).to(ACC), mask)


@triton.jit
def _adaptive_avg_backward_kernel(g, gin, total, H, W, OH, OW, KH, KW, ACC: tl.constexpr,
                                  BLOCK: tl.constexpr):
    # Each input element gathers grad / window size from the outputs whose
    # windows hold it (KH x KW of them at most).
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, ih, iw = _split3(e, H, W)
    ohs, ohe = _window(ih, OH, H)
    ows, owe = _window(iw, OW, W)
    base = plane * OH * OW
    acc = tl.zeros((BLOCK,), ACC)
    for kh in range(0, KH):
        oh = ohs + kh
        hs, he = _window(oh, H, OH)
        for kw in range(0, KW):
            ow = ows + kw
            ws, we = _window(ow, W, OW)
            ok = mask & (oh < ohe) & (ow < owe)
            v = tl.load(g + base + oh * OW + ow, mask=ok, other=0).to(ACC)
            acc += v / tl.maximum((he - hs) * (we - ws), 1).to(ACC)
    _store(gin, e, acc, mask)


@triton.jit
def _adaptive_max_kernel(x, out, idx, total, H, W, OH, OW, KH, KW, ACC: tl.constexpr,
                         BLOCK: tl.constexpr):
    # PyTorch's rule: a value replaces the maximum when greater or NaN (so
    # the last NaN of a window wins); the index starts at the window's corner.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, oh, ow = _split3(e, OH, OW)
    hs, he = _window(oh, H, OH)
    ws, we = _window(ow, W, OW)
    base = plane * H * W
    best = tl.full((BLOCK,), float("-inf"), ACC)
    bidx = hs * W + ws
    for kh in range(0, KH):
        ih = hs + kh
        for kw in range(0, KW):
            iw = ws + kw
            ok = mask & (ih < he) & (iw < we)
            v = tl.load(x + base + ih * W + iw, mask=ok, other=0).to(ACC)
            take = ok & ((v > best) | (v != v))
            best = tl.where(take, v, best)
            bidx = tl.where(take, ih * W + iw, bidx)
    _store(out, e, best, mask)
    tl.store(idx + e, bidx, mask=mask)


def _check_adaptive_input(name, x, output_size):
    if len(output_size) != 2:
        raise RuntimeError(f"{name}: output_size must be 2, got {list(output_size)}")
    if x.dim() not in (3, 4):
        raise RuntimeError(f"{name}(): Expected 3D or 4D tensor, but got {list(x.shape)}")
    for d in (-2, -1):
        if x.shape[d] <= 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(x.shape)} with dimension {d + x.dim()} being empty")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(output_size)}")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating point input, got {x.dtype}")


def _adaptive_avg_into(self, output_size, out):
    x = _contiguous(self)
    H, W = x.shape[-2:]
    OH, OW = output_size
    total = out.numel()
    if total == 0:
        return
    o_t = _dense(out)
    grid, block = _grid(total)
    launch(_adaptive_avg_kernel, grid, x, o_t, total, H, W, OH, OW, _max_window(H, OH),
           _max_window(W, OW), ACC=_tl_acc(x.dtype), BLOCK=block)
    _write_back(out, o_t)


def _adaptive_out_shape(self, output_size):
    return list(self.shape[:-2]) + [int(o) for o in output_size]


def _adaptive_avg_pool2d(self, output_size):
    _check_adaptive_input("adaptive_avg_pool2d", self, output_size)
    fmt = torch.channels_last if self.dim() == 4 and self.is_contiguous(
        memory_format=torch.channels_last) and not self.is_contiguous() else torch.contiguous_format
    out = torch.empty(_adaptive_out_shape(self, output_size), dtype=self.dtype, device=self.device,
                      memory_format=fmt)
    _adaptive_avg_into(self, output_size, out)
    return out


def adaptive_avg_pool2d_out(self, output_size, out):
    _check_adaptive_input("adaptive_avg_pool2d", self, output_size)
    if out.dtype != self.dtype:
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected out to have dtype {self.dtype}, "
                           f"but got {out.dtype}")
    out.resize_(_adaptive_out_shape(self, output_size))  # a plain out= op sizes its own out
    _adaptive_avg_into(self, output_size, out)
    return out


def _adaptive_avg_pool2d_backward(grad_output, self):
    name = "adaptive_avg_pool2d_backward"
    for d in range(1, grad_output.dim()):
        if grad_output.shape[d] <= 0:
            raise RuntimeError(
                f"{name}(): Expected grad_output to have non-zero size for non-batch dimensions, "
                f"but grad_output has sizes {list(grad_output.shape)} with dimension {d} being empty")
    if self.dim() not in (3, 4) or grad_output.dim() != self.dim() or \
            grad_output.shape[:-2] != self.shape[:-2]:
        raise RuntimeError(f"{name}(): grad_output of shape {list(grad_output.shape)} does not "
                           f"match an input of shape {list(self.shape)}")
    if grad_output.dtype != self.dtype:
        raise RuntimeError(f"{name}(): expected dtype {self.dtype} for `grad_output` but got "
                           f"dtype {grad_output.dtype}")
    g = _contiguous(grad_output)
    H, W = self.shape[-2:]
    OH, OW = g.shape[-2:]
    gi = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    total = gi.numel()
    if total:
        grid, block = _grid(total)
        launch(_adaptive_avg_backward_kernel, grid, g, gi, total, H, W, OH, OW,
               _max_window(OH, H), _max_window(OW, W), ACC=_tl_acc(g.dtype), BLOCK=block)
    return gi


def adaptive_max_pool2d_out(self, output_size, out, indices):
    x = _contiguous(self)
    H, W = x.shape[-2:]
    OH, OW = output_size
    total = out.numel()
    if total == 0:
        return
    o_t, i_t = _dense(out), _dense(indices)
    grid, block = _grid(total)
    launch(_adaptive_max_kernel, grid, x, o_t, i_t, total, H, W, OH, OW, _max_window(H, OH),
           _max_window(W, OW), ACC=_tl_acc(x.dtype), BLOCK=block)
    _write_back(out, o_t)
    _write_back(indices, i_t)


def adaptive_max_pool2d_backward_out(grad_output, self, indices, grad_input):
    planes = self.numel() // (self.shape[-2] * self.shape[-1]) if self.numel() else 0
    gi = _dense(grad_input)
    fill_(gi, 0)
    if grad_output.numel():
        g2 = _contiguous(grad_output).reshape(planes, -1)
        i2 = _contiguous(indices).reshape(planes, -1)
        _gather_scatter(i2, g2, gi.view(planes, -1), 1, 2)  # add (fp16/bf16 via float32)
    _write_back(grad_input, gi)


KERNELS.update({"_adaptive_avg_pool2d": _adaptive_avg_pool2d,
                "adaptive_avg_pool2d_out": adaptive_avg_pool2d_out,
                "_adaptive_avg_pool2d_backward": _adaptive_avg_pool2d_backward,
                "adaptive_max_pool2d": adaptive_max_pool2d_out,
                "adaptive_max_pool2d_backward": adaptive_max_pool2d_backward_out})


# -- linear interpolation, 1-d and 2-d (structured impls) -----------------------
#   upsample_bilinear2d.out impl: (self, output_size, align_corners, scales_h, scales_w, out)
#   upsample_bilinear2d_backward.grad_input impl:
#       (grad_output, output_size, input_size, align_corners, scales_h, scales_w, grad_input)
#   upsample_linear1d.out impl: (self, output_size, align_corners, scales, out)
#   upsample_linear1d_backward.grad_input impl:
#       (grad_output, output_size, input_size, align_corners, scales, grad_input)
# Source position of output o (float32, ATen/native/UpSample.h):
#   align_corners: o * (I-1)/(O-1)   (0 when O == 1)
#   else:          max(scale * (o + 0.5) - 0.5, 0), scale = 1/scales when given, else I/O
# then i0 = min(floor(src), I-1), i1 = i0 + (i0 < I-1), lambda = clamp(src - i0, 0, 1).
# As PyTorch's CPU kernels, a dimension with O == I is copied whatever the scale.

def _linear_scale(in_size, out_size, align_corners, scale):
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if out_size == in_size:
        return 1.0
    return (1.0 / scale) if scale is not None and scale > 0 else in_size / out_size


@triton.jit
def _linear_src(o, scale, size, ALIGN: tl.constexpr):
    of = o.to(tl.float32)
    if ALIGN:
        src = scale * of
    else:
        src = tl.maximum(scale * (of + 0.5) - 0.5, 0.0)
    i0 = tl.minimum(src.to(tl.int64), size - 1)  # src >= 0: truncation is floor
    lam = tl.minimum(tl.maximum(src - i0.to(tl.float32), 0.0), 1.0)
    i1 = tl.where(i0 < size - 1, i0 + 1, i0)
    return i0, i1, lam


@triton.jit
def _linear_kernel(x, out, total, H, W, OH, OW, sh, sw, ALIGN: tl.constexpr,
                   ONE_ROW: tl.constexpr, BACKWARD: tl.constexpr, ACC: tl.constexpr,
                   BLOCK: tl.constexpr):
    # Forward: out[e] from x.  Backward: x is grad_output (by output element),
    # out the float32 (float64) accumulator of grad_input.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, oh, ow = _split3(e, OH, OW)
    w0, w1, lw = _linear_src(ow, sw, W, ALIGN)
    lw = lw.to(ACC)
    base = plane * H * W
    if ONE_ROW:
        if BACKWARD:
            g = tl.load(x + e, mask=mask, other=0).to(ACC)
            tl.atomic_add(out + base + w0, g * (1 - lw), mask=mask)
            tl.atomic_add(out + base + w1, g * lw, mask=mask)
        else:
            v = (1 - lw) * tl.load(x + base + w0, mask=mask, other=0).to(ACC) + \
                lw * tl.load(x + base + w1, mask=mask, other=0).to(ACC)
            _store(out, e, v, mask)
    else:
        h0, h1, lh = _linear_src(oh, sh, H, ALIGN)
        lh = lh.to(ACC)
        r0 = base + h0 * W
        r1 = base + h1 * W
        if BACKWARD:
            g = tl.load(x + e, mask=mask, other=0).to(ACC)
            g0 = g * (1 - lh)
            g1 = g * lh
            tl.atomic_add(out + r0 + w0, g0 * (1 - lw), mask=mask)
            tl.atomic_add(out + r0 + w1, g0 * lw, mask=mask)
            tl.atomic_add(out + r1 + w0, g1 * (1 - lw), mask=mask)
            tl.atomic_add(out + r1 + w1, g1 * lw, mask=mask)
        else:
            top = (1 - lw) * tl.load(x + r0 + w0, mask=mask, other=0).to(ACC) + \
                lw * tl.load(x + r0 + w1, mask=mask, other=0).to(ACC)
            bot = (1 - lw) * tl.load(x + r1 + w0, mask=mask, other=0).to(ACC) + \
                lw * tl.load(x + r1 + w1, mask=mask, other=0).to(ACC)
            _store(out, e, (1 - lh) * top + lh * bot, mask)


def _linear_scales(in_shape, out_shape, align_corners, scales):
    (H, W), (OH, OW) = _rows(in_shape), _rows(out_shape)
    scales = [None] * (2 - len(scales)) + list(scales)
    return (float(_linear_scale(H, OH, align_corners, scales[0])),
            float(_linear_scale(W, OW, align_corners, scales[1])))


def _upsample_linear(self, out, align_corners, scales):
    x = _contiguous(self)
    (H, W), (OH, OW) = _rows(x.shape), _rows(out.shape)
    total = out.numel()
    if total == 0:
        return
    o_t = _dense(out)
    grid, block = _grid(total)
    launch(_linear_kernel, grid, x, o_t, total, H, W, OH, OW,
           *_linear_scales(x.shape, out.shape, align_corners, scales),
           ALIGN=bool(align_corners), ONE_ROW=x.dim() == 3, BACKWARD=False,
           ACC=_tl_acc(x.dtype), BLOCK=block)
    _write_back(out, o_t)


def _upsample_linear_backward(grad_output, grad_input, align_corners, scales):
    g = _contiguous(grad_output)
    (H, W), (OH, OW) = _rows(grad_input.shape), _rows(g.shape)
    acc = _accumulator(grad_input)
    total = g.numel()
    if total:
        grid, block = _grid(total)
        launch(_linear_kernel, grid, g, acc, total, H, W, OH, OW,
               *_linear_scales(grad_input.shape, g.shape, align_corners, scales),
               ALIGN=bool(align_corners), ONE_ROW=g.dim() == 3, BACKWARD=True,
               ACC=_tl_acc(acc.dtype), BLOCK=block)
    copy_kernel((grad_input,), (acc,))


def upsample_bilinear2d_out(self, output_size, align_corners, scales_h, scales_w, out):
    _upsample_linear(self, out, align_corners, (scales_h, scales_w))


def upsample_bilinear2d_backward_out(grad_output, output_size, input_size, align_corners,
                                     scales_h, scales_w, grad_input):
    _upsample_linear_backward(grad_output, grad_input, align_corners, (scales_h, scales_w))


def upsample_linear1d_out(self, output_size, align_corners, scales, out):
    _upsample_linear(self, out, align_corners, (scales,))


def upsample_linear1d_backward_out(grad_output, output_size, input_size, align_corners, scales,
                                   grad_input):
    _upsample_linear_backward(grad_output, grad_input, align_corners, (scales,))


KERNELS.update({"upsample_bilinear2d": upsample_bilinear2d_out,
                "upsample_bilinear2d_backward": upsample_bilinear2d_backward_out,
                "upsample_linear1d": upsample_linear1d_out,
                "upsample_linear1d_backward": upsample_linear1d_backward_out})


# -- nearest / nearest-exact, 1-d and exact 2-d (structured impls) --------------
# The kernel of upsample_nearest2d (ops/conv.py), with a 1-d signal as one row
# and "nearest-exact"'s half-pixel offset: src = min(floor((o + 0.5) * scale), I-1).
#   upsample_nearest1d.out impl: (self, output_size, scales, out)
#   upsample_nearest1d_backward.grad_input impl: (grad_output, output_size, input_size, scales, grad_input)
#   _upsample_nearest_exact1d(.out / _backward.grad_input): the same arguments
#   _upsample_nearest_exact2d(.out / _backward.grad_input): as upsample_nearest2d's

def upsample_nearest1d_out(self, output_size, scales, out):
    upsample_nearest(self, out, (scales,))


def upsample_nearest1d_backward_out(grad_output, output_size, input_size, scales, grad_input):
    upsample_nearest_backward(grad_output, grad_input, (scales,))


def upsample_nearest_exact1d_out(self, output_size, scales, out):
    upsample_nearest(self, out, (scales,), exact=True)


def upsample_nearest_exact1d_backward_out(grad_output, output_size, input_size, scales,
                                          grad_input):
    upsample_nearest_backward(grad_output, grad_input, (scales,), exact=True)


def upsample_nearest_exact2d_out(self, output_size, scales_h, scales_w, out):
    upsample_nearest(self, out, (scales_h, scales_w), exact=True)


def upsample_nearest_exact2d_backward_out(grad_output, output_size, input_size, scales_h,
                                          scales_w, grad_input):
    upsample_nearest_backward(grad_output, grad_input, (scales_h, scales_w), exact=True)


KERNELS.update({"upsample_nearest1d": upsample_nearest1d_out,
                "upsample_nearest1d_backward": upsample_nearest1d_backward_out,
                "_upsample_nearest_exact1d": upsample_nearest_exact1d_out,
                "_upsample_nearest_exact1d_backward": upsample_nearest_exact1d_backward_out,
                "_upsample_nearest_exact2d": upsample_nearest_exact2d_out,
                "_upsample_nearest_exact2d_backward": upsample_nearest_exact2d_backward_out})


# -- reflection / replication padding, 1-d and 2-d ------------------------------
#   reflection_pad1d.out, replication_pad1d.out, replication_pad2d.out impls: (self, padding, out)
#   reflection_pad1d_backward.grad_input, replication_pad1d_backward.grad_input impls:
#       (grad_output, self, padding, grad_input)                             (structured)
#   reflection_pad2d(self, padding) / .out(self, padding, out)               (plain)
#   reflection_pad2d_backward / replication_pad2d_backward(grad_output, self, padding)
#       and their .grad_input(..., grad_input)                               (plain)
# Output o of a dimension padded by (before, after) reads input i = o - before,
# reflected (i < 0: -i; i >= I: 2(I-1) - i) or clamped into [0, I-1]; negative
# padding crops.  The backward adds each grad_output element into its source.

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
def _pad_kernel(x, out, total, H, W, OH, OW, top, left, REFLECT: tl.constexpr,
                BACKWARD: tl.constexpr, BLOCK: tl.constexpr):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, oh, ow = _split3(e, OH, OW)
    src = plane * H * W + _pad_src(oh, top, H, REFLECT) * W + _pad_src(ow, left, W, REFLECT)
    if BACKWARD:  # x: grad_output (by output element), out: float32/64 grad_input
        v = tl.load(x + e, mask=mask, other=0).to(out.dtype.element_ty)
        tl.atomic_add(out + src, v, mask=mask)
    else:
        tl.store(out + e, tl.load(x + src, mask=mask, other=0), mask=mask)


def _pads(padding):
    """(left, right, top, bottom) of a 1-d (2 values) or 2-d (4 values) padding."""
    p = [int(v) for v in padding]
    return (p[0], p[1], 0, 0) if len(p) == 2 else tuple(p)


def _padded_shape(shape, padding):
    left, right, top, bottom = _pads(padding)
    if len(padding) == 2:
        return list(shape[:-1]) + [shape[-1] + left + right]
    return list(shape[:-2]) + [shape[-2] + top + bottom, shape[-1] + left + right]


def _hw(shape, padding):
    """(H, W) of the planes a 1-d (one row) or 2-d padding works on."""
    return (1, shape[-1]) if len(padding) == 2 else (shape[-2], shape[-1])


def _pad(self, padding, out, reflect):
    x = _contiguous(self)
    left, _, top, _ = _pads(padding)
    (H, W), (OH, OW) = _hw(x.shape, padding), _hw(out.shape, padding)
    total = out.numel()
    if total == 0:
        return
    o_t = _dense(out)
    grid, block = _grid(total)
    launch(_pad_kernel, grid, x, o_t, total, H, W, OH, OW, top, left, REFLECT=reflect,
           BACKWARD=False, BLOCK=block)
    _write_back(out, o_t)


def _pad_backward(grad_output, padding, grad_input, reflect):
    g = _contiguous(grad_output)
    left, _, top, _ = _pads(padding)
    (H, W), (OH, OW) = _hw(grad_input.shape, padding), _hw(g.shape, padding)
    acc = _accumulator(grad_input)
    total = g.numel()
    if total:
        grid, block = _grid(total)
        launch(_pad_kernel, grid, g, acc, total, H, W, OH, OW, top, left, REFLECT=reflect,
               BACKWARD=True, BLOCK=block)
    copy_kernel((grad_input,), (acc,))


def _check_pad2d(name, x, padding, reflect):
    if len(padding) != 4:
        raise RuntimeError(f"{name}: padding size is expected to be 4, got {len(padding)}")
    if not ((x.dim() == 3 and x.shape[0] != 0 and x.shape[1] != 0 and x.shape[2] != 0) or
            (x.dim() == 4 and x.shape[1] != 0 and x.shape[2] != 0 and x.shape[3] != 0)):
        raise RuntimeError(f"{name}: Expected 3D or 4D (batch mode) tensor with possibly 0 batch "
                           f"size and other non-zero dimensions for input, but got: {list(x.shape)}")
    left, right, top, bottom = _pads(padding)
    H, W = x.shape[-2:]
    if reflect:
        if not (left < W and right < W):
            raise RuntimeError(f"{name}: Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, {right}) "
                               f"at dimension {x.dim() - 1} of input {list(x.shape)}")
        if not (top < H and bottom < H):
            raise RuntimeError(f"{name}: Argument #6: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({top}, {bottom}) "
                               f"at dimension {x.dim() - 2} of input {list(x.shape)}")
    OH, OW = H + top + bottom, W + left + right
    if OH < 1 or OW < 1:
        raise RuntimeError(f"{name}: input (H: {H}, W: {W}) is too small. Calculated output "
                           f"H: {OH} W: {OW}")


def _check_pad2d_grad(name, grad_output, x, padding):
    expected = _padded_shape(x.shape, padding)
    if list(grad_output.shape) != expected:
        raise RuntimeError(f"{name}: grad_output of shape {list(grad_output.shape)} does not match "
                           f"the padded input's shape {expected}")
    if grad_output.dtype != x.dtype:
        raise RuntimeError(f"{name}: expected dtype {x.dtype} for `grad_output` but got dtype "
                           f"{grad_output.dtype}")


def reflection_pad2d_out(self, padding, out):
    _check_pad2d("reflection_pad2d", self, padding, True)
    out.resize_(_padded_shape(self.shape, padding))  # a plain out= op sizes its own out
    _pad(self, padding, out, True)
    return out


def reflection_pad2d(self, padding):
    _check_pad2d("reflection_pad2d", self, padding, True)
    out = torch.empty(_padded_shape(self.shape, padding), dtype=self.dtype, device=self.device)
    _pad(self, padding, out, True)
    return out


def _pad2d_backward_fn(name, reflect):
    def backward(grad_output, self, padding):
        _check_pad2d(name, self, padding, reflect)
        _check_pad2d_grad(name, grad_output, self, padding)
        grad_input = torch.empty(self.shape, dtype=self.dtype, device=self.device)
        _pad_backward(grad_output, padding, grad_input, reflect)
        return grad_input

    def backward_out(grad_output, self, padding, grad_input):
        _check_pad2d(name, self, padding, reflect)
        _check_pad2d_grad(name, grad_output, self, padding)
        grad_input.resize_(self.shape)
        _pad_backward(grad_output, padding, grad_input, reflect)
        return grad_input
    return backward, backward_out


reflection_pad2d_backward, reflection_pad2d_backward_out = \
    _pad2d_backward_fn("reflection_pad2d_backward", True)
replication_pad2d_backward, replication_pad2d_backward_out = \
    _pad2d_backward_fn("replication_pad2d_backward", False)


def reflection_pad1d_out(self, padding, out):
    _pad(self, padding, out, True)


def reflection_pad1d_backward_out(grad_output, self, padding, grad_input):
    _pad_backward(grad_output, padding, grad_input, True)


def replication_pad1d_out(self, padding, out):
    _pad(self, padding, out, False)


def replication_pad1d_backward_out(grad_output, self, padding, grad_input):
    _pad_backward(grad_output, padding, grad_input, False)


def replication_pad2d_out(self, padding, out):
    _pad(self, padding, out, False)


KERNELS.update({"reflection_pad2d": reflection_pad2d, "reflection_pad2d_out": reflection_pad2d_out,
                "reflection_pad2d_backward": reflection_pad2d_backward,
                "reflection_pad2d_backward_out": reflection_pad2d_backward_out,
                "replication_pad2d": replication_pad2d_out,
                "replication_pad2d_backward": replication_pad2d_backward,
                "replication_pad2d_backward_out": replication_pad2d_backward_out,
                "reflection_pad1d": reflection_pad1d_out,
                "reflection_pad1d_backward": reflection_pad1d_backward_out,
                "replication_pad1d": replication_pad1d_out,
                "replication_pad1d_backward": replication_pad1d_backward_out})


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
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kh} "
                           f"kernel_width: {kw}")
    checks = [
        (sw > 0 and sh > 0, f"stride should be greater than zero, but got stride_height: {sh} "
                            f"stride_width: {sw}"),
        (dw > 0 and dh > 0, f"dilation should be greater than zero, but got dilation_height: {dh} "
                            f"dilation_width: {dw}"),
        (pw >= 0 and ph >= 0, f"padding should be non-negative, but got pad_height: {ph} "
                              f"pad_width: {pw}")]
    if not stride_first:  # im2col checks stride last
        checks = checks[1:] + checks[:1]
    for ok, msg in checks:
        if not ok:
            raise RuntimeError(msg)


def _im2col_shape(self, kernel_size, dilation, padding, stride):
    _check_window(kernel_size, dilation, padding, stride, False)
    x = self
    if not ((x.dim() == 3 and x.shape[0] != 0 and x.shape[1] != 0 and x.shape[2] != 0) or
            (x.dim() == 4 and x.shape[1] != 0 and x.shape[2] != 0 and x.shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(x.shape)}")
    H, W = x.shape[-2:]
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    OH, OW = _blocks(H, ph, dh, kh, sh), _blocks(W, pw, dw, kw, sw)
    if OH < 1 or OW < 1:
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size=({kh}, {kw}), "
                           f"dilation=({dh}, {dw}), padding=({ph}, {pw}), calculated shape of the "
                           f"array of sliding blocks as ({OH}, {OW}), but its components must be at "
                           "least one.")
    return OH, OW


def _im2col_into(self, kernel_size, dilation, padding, stride, grid):
    x = self if self.dim() == 4 else self.unsqueeze(0)
    cols = _im2col(x, list(grid), list(kernel_size), list(stride), list(padding), list(dilation))
    return cols if self.dim() == 4 else cols.squeeze(0)


def im2col(self, kernel_size, dilation, padding, stride):
    grid = _im2col_shape(self, kernel_size, dilation, padding, stride)
    return _im2col_into(self, kernel_size, dilation, padding, stride, grid)


def im2col_out(self, kernel_size, dilation, padding, stride, out):
    cols = im2col(self, kernel_size, dilation, padding, stride)
    out.resize_(cols.shape)  # a plain out= op sizes its own out
    copy_kernel((out,), (cols,))
    return out


def _col2im_check(self, output_size, kernel_size, dilation, padding, stride):
    _check_window(kernel_size, dilation, padding, stride, True)
    x = self
    if not ((x.dim() == 2 and x.shape[0] != 0 and x.shape[1] != 0) or
            (x.dim() == 3 and x.shape[1] != 0 and x.shape[2] != 0)):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch "
                           f"size and non-zero dimensions for input, but got: {list(x.shape)}")
    (H, W), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = \
        output_size, kernel_size, dilation, padding, stride
    planes, length = x.shape[-2:]
    if planes % (kh * kw) != 0:
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={planes} and kernel_size=({kh}, {kw}).")
    bh, bw = _blocks(H, ph, dh, kh, sh), _blocks(W, pw, dw, kw, sw)
    desc = (f"Given output_size=({H}, {W}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), "
            f"padding=({ph}, {pw}), stride=({sh}, {sw}), ")
    if length != bh * bw:
        raise RuntimeError(desc + "expected size of input's dimension 2 to match the calculated "
                           f"number of sliding blocks {bh} * {bw} = {bh * bw}, but got "
                           f"input.size(2)={length}.")
    if bh < 1 or bw < 1:
        raise RuntimeError(desc + f"calculated shape of the array of sliding blocks as ({bh}, {bw}), "
                           "which is too small (non-positive)")
    if H < 1 or W < 1:
        raise RuntimeError("Expected output spatial size to be positive, but got: "
                           f"output_size=({H}, {W}).")
    return (bh, bw), planes // (kh * kw)


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    grid, C = _col2im_check(self, output_size, kernel_size, dilation, padding, stride)
    cols = self if self.dim() == 3 else self.unsqueeze(0)
    im = _col2im(cols, C, list(output_size), list(grid), list(kernel_size), list(stride),
                 list(padding), list(dilation), self.dtype)
    return im if self.dim() == 3 else im.squeeze(0)


def col2im_out(self, output_size, kernel_size, dilation, padding, stride, out):
    im = col2im(self, output_size, kernel_size, dilation, padding, stride)
    out.resize_(im.shape)  # a plain out= op sizes its own out
    copy_kernel((out,), (im,))
    return out


KERNELS.update({"im2col": im2col, "im2col_out": im2col_out, "col2im": col2im,
                "col2im_out": col2im_out})
