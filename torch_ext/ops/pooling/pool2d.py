"""2-d max and average pooling (+ backward) and max_unpool2d."""

import torch
import triton
import triton.language as tl

from .._common import tl_float_acc
from .._launch import cdiv, launch
from ..copy import copy_kernel
from .._common import block_for
from .._common import contiguous
from .._declare import kernel
from .._common import dense_out, as_planes, split3, store_masked, write_back

# -- 2-d pooling (structured impls, convention (2)) ---------------------------
#   max_pool2d_with_indices.out impl: (self, kernel, stride, padding, dilation, ceil_mode, out, indices)
#   max_pool2d_with_indices_backward.grad_input impl:
#       (grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices, grad_input)
#   avg_pool2d.out impl: (self, kH, kW, dH, dW, padH, padW, ceil_mode, count_include_pad,
#                         divisor, out)   (precomputed by the meta)
#   avg_pool2d_backward.grad_input impl:
#       (grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor, grad_input)
# PyTorch's meta functions check the arguments and size the outputs; an
# index is the position in its (H, W) plane, as in PyTorch.


def _pair(v, default=None):
    v = list(v) if v is not None else []
    if not v:
        v = list(default)
    return v * 2 if len(v) == 1 else v


def _pool_params(kernel_size, stride, padding):
    """kh, kw, sh, sw, ph, pw (an empty stride is the kernel size, as in PyTorch)."""
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride, (kh, kw))
    ph, pw = _pair(padding)
    return kh, kw, sh, sw, ph, pw


@triton.jit
def _elements(total, INDEX64: tl.constexpr, BLOCK: tl.constexpr):
    """This program's flat elements and which are below `total`, in 32-bit index math
    unless the tensors need 64 (INDEX64)."""
    e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if INDEX64:
        e = e.to(tl.int64)
    return e, e < total


@triton.jit
def _max_pool_kernel(
    x,
    out,
    idx,
    total,
    H,
    W,
    OH,
    OW,
    ph,
    pw,
    KH: tl.constexpr,
    KW: tl.constexpr,
    sh: tl.constexpr,
    sw: tl.constexpr,
    dh: tl.constexpr,
    dw: tl.constexpr,
    ACC: tl.constexpr,
    INDEX64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # The window's geometry is constexpr (its taps unrolled, divisions by constants).
    e, mask = _elements(total, INDEX64, BLOCK)
    plane, oh, ow = split3(e, OH, OW)
    base = x + plane * H * W
    best = tl.full((BLOCK,), float("-inf"), ACC)
    bidx = tl.full((BLOCK,), -1, tl.int32)
    for kh in tl.static_range(KH):
        ih = oh * sh - ph + kh * dh
        okh = mask & (ih >= 0) & (ih < H)
        for kw in tl.static_range(KW):
            iw = ow * sw - pw + kw * dw
            ok = okh & (iw >= 0) & (iw < W)
            v = tl.load(base + ih * W + iw, mask=ok, other=0).to(ACC)
            take = ok & ((v > best) | (v != v) | (bidx < 0))
            best = tl.where(take, v, best)
            bidx = tl.where(take, (ih * W + iw).to(tl.int32), bidx)
    store_masked(out, e, best, mask)
    tl.store(idx + e, bidx.to(tl.int64), mask=mask)


@triton.jit
def _avg_window(oh, ow, H, W, KH, KW, sh, sw, ph, pw, COUNT_PAD: tl.constexpr, divisor):
    hs = oh * sh - ph
    ws = ow * sw - pw
    he = tl.minimum(hs + KH, H + ph)
    we = tl.minimum(ws + KW, W + pw)
    pool = (he - hs) * (we - ws)
    hs = tl.maximum(hs, 0)
    ws = tl.maximum(ws, 0)
    he = tl.minimum(he, H)
    we = tl.minimum(we, W)
    if divisor != 0:  # divisor_override (PyTorch takes any non-zero value)
        d = tl.zeros_like(pool) + divisor
    elif COUNT_PAD:
        d = pool
    else:
        d = (he - hs) * (we - ws)
    return hs, ws, he, we, d


@triton.jit
def _avg_pool_kernel(
    x,
    out,
    total,
    H,
    W,
    OH,
    OW,
    KH,
    KW,
    sh,
    sw,
    ph,
    pw,
    divisor,
    COUNT_PAD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, oh, ow = split3(e, OH, OW)
    hs, ws, he, we, d = _avg_window(oh, ow, H, W, KH, KW, sh, sw, ph, pw, COUNT_PAD, divisor)
    acc = tl.zeros((BLOCK,), ACC)
    for k in range(0, KH * KW):
        ih = hs + k // KW
        iw = ws + k % KW
        ok = mask & (ih < he) & (iw < we)
        acc += tl.load(x + plane * H * W + ih * W + iw, mask=ok, other=0).to(ACC)
    store_masked(out, e, acc / d.to(ACC), mask)


@triton.jit
def _covering_window(ih, iw, k, KW, sh, sw, ph, pw, dh, dw, OH, OW):
    """The output window (oh, ow) whose kernel offset k lands on input (ih, iw), and
    whether there is one (the backward kernels' gather)."""
    th = ih + ph - (k // KW) * dh
    tw = iw + pw - (k % KW) * dw
    oh = th // sh
    ow = tw // sw
    covers = (th >= 0) & (tw >= 0) & (oh * sh == th) & (ow * sw == tw) & (oh < OH) & (ow < OW)
    return oh, ow, covers


@triton.jit
def _avg_pool_backward_kernel(
    g,
    gin,
    total,
    H,
    W,
    OH,
    OW,
    KH,
    KW,
    sh,
    sw,
    ph,
    pw,
    divisor,
    COUNT_PAD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Each input element gathers grad/divisor from the windows that cover it.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, ih, iw = split3(e, H, W)
    acc = tl.zeros((BLOCK,), ACC)
    for k in range(0, KH * KW):
        oh, ow, covers = _covering_window(ih, iw, k, KW, sh, sw, ph, pw, 1, 1, OH, OW)
        ok = mask & covers
        hs, ws, he, we, d = _avg_window(oh, ow, H, W, KH, KW, sh, sw, ph, pw, COUNT_PAD, divisor)
        inside = (ih >= hs) & (ih < he) & (iw >= ws) & (iw < we)
        v = tl.load(g + plane * OH * OW + oh * OW + ow, mask=ok & inside, other=0).to(ACC)
        acc += v / tl.maximum(d, 1).to(ACC)
    store_masked(gin, e, acc, mask)


def _launch_max_pool(kern, tensors, total, hw, out_hw, kernel_size, stride, padding,
                     dilation, dtype):  # fmt: skip
    """One launch of a max-pool kernel over `total` elements: the tensors, then the
    geometry both directions take (sizes, window, stride, padding, dilation)."""
    kh, kw, sh, sw, ph, pw = _pool_params(kernel_size, stride, padding)
    dh, dw = _pair(dilation)
    block = block_for(total)
    n = max(int(t.numel()) for t in tensors)  # offsets reach every element of the largest
    launch(kern, (cdiv(total, block),), *tensors, total, *hw, *out_hw, ph, pw,
           KH=kh, KW=kw, sh=sh, sw=sw, dh=dh, dw=dw, ACC=tl_float_acc(dtype),
           INDEX64=n + block >= 2**31, BLOCK=block)  # fmt: skip


@kernel("max_pool2d_with_indices")
def max_pool2d_with_indices_out(
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    ceil_mode: bool,
    out: torch.Tensor,
    indices: torch.Tensor,
) -> None:
    x, H, W = as_planes(self)
    total = out.numel()
    if total == 0:
        return
    o_t, i_t = dense_out(out), dense_out(indices)
    _launch_max_pool(_max_pool_kernel, (x, o_t, i_t), total, (H, W), out.shape[-2:],
                     kernel_size, stride, padding, dilation, x.dtype)  # fmt: skip
    write_back(out, o_t)
    write_back(indices, i_t)


@triton.jit
def _max_pool_backward_kernel(
    g,
    idx,
    gin,
    total,
    H,
    W,
    OH,
    OW,
    ph,
    pw,
    KH: tl.constexpr,
    KW: tl.constexpr,
    sh: tl.constexpr,
    sw: tl.constexpr,
    dh: tl.constexpr,
    dw: tl.constexpr,
    ACC: tl.constexpr,
    INDEX64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Each input element gathers the gradients of the windows that cover it and chose it
    # (their index is its own): one launch, no zero fill, no atomics, a fixed order. The
    # taps unrolled with constant strides (a runtime geometry and 64-bit index math cost
    # ResNet-50's stem pool 1.57 ms on an H200, torch 0.30).
    e, mask = _elements(total, INDEX64, BLOCK)
    plane, ih, iw = split3(e, H, W)
    me = ih * W + iw
    po = plane * OH * OW
    acc = tl.zeros((BLOCK,), ACC)
    for kh in tl.static_range(KH):
        th = ih + ph - kh * dh
        oh = th // sh
        okh = mask & (th >= 0) & (oh * sh == th) & (oh < OH)
        for kw in tl.static_range(KW):
            tw = iw + pw - kw * dw
            ow = tw // sw
            ok = okh & (tw >= 0) & (ow * sw == tw) & (ow < OW)
            o = po + oh * OW + ow
            chosen = tl.load(idx + o, mask=ok, other=-1)
            v = tl.load(g + o, mask=ok & (chosen == me), other=0).to(ACC)
            acc += v
    store_masked(gin, e, acc, mask)


@kernel("max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    ceil_mode: bool,
    indices: torch.Tensor,
    grad_input: torch.Tensor,
) -> None:
    gi = dense_out(grad_input)
    if gi.numel():
        g, idx = contiguous(grad_output), contiguous(indices)
        _launch_max_pool(_max_pool_backward_kernel, (g, idx, gi), gi.numel(),
                         self.shape[-2:], grad_output.shape[-2:], kernel_size, stride,
                         padding, dilation, gi.dtype)  # fmt: skip
    write_back(grad_input, gi)


@kernel("avg_pool2d")
def avg_pool2d_out(
    self: torch.Tensor,
    kh: int,
    kw: int,
    sh: int,
    sw: int,
    ph: int,
    pw: int,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    out: torch.Tensor,
) -> None:
    # The meta's precomputed kernel_size, stride and padding arrive as ints.
    x, H, W = as_planes(self)
    OH, OW = out.shape[-2], out.shape[-1]
    total = out.numel()
    if total == 0:
        return

    o_t = dense_out(out)
    block = block_for(total)
    launch(
        _avg_pool_kernel,
        (cdiv(total, block),),
        x,
        o_t,
        total,
        H,
        W,
        OH,
        OW,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        int(divisor_override or 0),
        COUNT_PAD=bool(count_include_pad),
        ACC=tl_float_acc(self.dtype),
        BLOCK=block,
    )
    write_back(out, o_t)


@kernel("avg_pool2d_backward")
def avg_pool2d_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int],
    padding: list[int],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    grad_input: torch.Tensor,
) -> None:
    kh, kw, sh, sw, ph, pw = _pool_params(kernel_size, stride, padding)
    H, W = self.shape[-2], self.shape[-1]
    g = contiguous(grad_output)
    OH, OW = g.shape[-2], g.shape[-1]
    total = grad_input.numel()
    if total == 0:
        return

    gi = dense_out(grad_input)
    block = block_for(total)
    launch(
        _avg_pool_backward_kernel,
        (cdiv(total, block),),
        g,
        gi,
        total,
        H,
        W,
        OH,
        OW,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        int(divisor_override or 0),
        COUNT_PAD=bool(count_include_pad),
        ACC=tl_float_acc(self.dtype),
        BLOCK=block,
    )
    write_back(grad_input, gi)


@kernel()
def max_unpool2d_out(
    self: torch.Tensor, indices: torch.Tensor, output_size: list[int], out: torch.Tensor
) -> torch.Tensor:
    """max_unpool2d.out(self, indices, output_size, out): zeros, with each value
    written at its index into the output plane (of max_pool2d's return_indices)."""
    if self.dim() not in (3, 4):
        raise RuntimeError(
            f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor "
            f"with {self.dim()} dimensions."
        )
    if list(indices.shape) != list(self.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(self.shape)}) but got indices tensor with shape: "
            f"{list(indices.shape)}"
        )
    if indices.dtype != torch.long:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    oh, ow = output_size
    shape = [*self.shape[:-2], oh, ow]
    if list(out.shape) != shape:
        out.resize_(shape)
    plane = torch.zeros(shape, dtype=self.dtype, device=self.device)
    flat = plane.view(*shape[:-2], oh * ow)
    if self.numel():
        flat.scatter_(-1, indices.reshape(*self.shape[:-2], -1), self.reshape(*self.shape[:-2], -1))
    copy_kernel((out,), (plane,))
    return out


@kernel()
def max_unpool2d(self: torch.Tensor, indices: torch.Tensor, output_size: list[int]) -> torch.Tensor:
    out = torch.empty(0, dtype=self.dtype, device=self.device)
    return max_unpool2d_out(self, indices, output_size, out)
