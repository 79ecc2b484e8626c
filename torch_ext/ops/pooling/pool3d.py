"""3-d max and average pooling (+ backward)."""

import torch
import triton
import triton.language as tl

from .._launch import cdiv, launch
from .._common import dense_out, split4, store_masked, write_back
from ..copy import copy_kernel
from .._common import block_for, write_result
from .._common import contiguous
from .._declare import kernel
from .._common import tl_float_acc
from .._common import alert_not_deterministic, float_acc

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
    for kk, pp, dd in zip(k, p, d):
        if pp < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pp}")
        if pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(
                "pad should be at most half of effective kernel size, but got "
                f"pad={pp}, kernel_size={kk} and dilation={dd}"
            )
    first = self.dim() - 4  # the non-batch dimensions: channels and the volume
    for i in range(first, self.dim()):
        if self.shape[i] == 0:
            raise RuntimeError(
                f"{name}(): Expected input's non-batch dimensions to have positive length, "
                f"but input has a shape of {list(self.shape)} and non-batch dimension {i} "
                "has length zero!"
            )
    return k, s, p, d


def _check_out_size(self, osz):
    """PyTorch's message for a volume the window does not fit."""
    if min(osz) < 1:
        c, d, h, w = self.shape[-4:]
        raise RuntimeError(
            f"Given input size: ({c}x{d}x{h}x{w}). Calculated output size: "
            f"({c}x{osz[0]}x{osz[1]}x{osz[2]}). Output size is too small"
        )


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
    plane, od, oh, ow = split4(e, OD, OH, OW)
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
        store_masked(out, e, best, mask)
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
    plane, od, oh, ow = split4(e, OD, OH, OW)
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
        store_masked(out, e, acc / div, mask)


def _volumes(x):
    """x as contiguous (planes, D, H, W) data, and D, H, W."""
    x = contiguous(x)
    return x, x.shape[-3], x.shape[-2], x.shape[-1]


@kernel()
def max_pool3d_with_indices(
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int] = (),
    padding: list[int] = 0,
    dilation: list[int] = 1,
    ceil_mode: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    k, s, p, d = _pool3_params(self, kernel_size, stride, padding, dilation, "max_pool3d")
    x, D, H, W = _volumes(self)
    osz = [
        _pool_out(n, kk, ss, pp, dd_, ceil_mode)
        for n, kk, ss, pp, dd_ in zip((D, H, W), k, s, p, d)
    ]
    _check_out_size(self, osz)
    shape = [*self.shape[:-3], *osz]
    out = torch.empty(shape, dtype=self.dtype, device=self.device)
    indices = torch.empty(shape, dtype=torch.long, device=self.device)
    total = out.numel()
    if total:
        block = block_for(total)
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
            ACC=tl_float_acc(self.dtype),
            BLOCK=block,
        )
    return out, indices


@kernel()
def max_pool3d_with_indices_out(
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    ceil_mode: bool,
    out: torch.Tensor,
    indices: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    o, i = max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
    for dst, src in ((out, o), (indices, i)):
        dst.resize_(src.shape)
        copy_kernel((dst,), (src,))
    return out, indices


@kernel()
def max_pool3d_with_indices_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    ceil_mode: bool,
    indices: torch.Tensor,
) -> torch.Tensor:
    x, D, H, W = _volumes(self)
    acc = torch.zeros(self.shape, dtype=float_acc(self.dtype), device=self.device)
    g = contiguous(grad_output)
    total = g.numel()
    if total:
        OD, OH, OW = g.shape[-3:]
        block = block_for(total)
        launch(
            _max_pool3d_kernel,
            (cdiv(total, block),),
            x,
            x,
            contiguous(indices),
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
            ACC=tl_float_acc(self.dtype),
            BLOCK=block,
        )
    return acc.to(self.dtype)


@kernel()
def max_pool3d_with_indices_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    ceil_mode: bool,
    indices: torch.Tensor,
    grad_input: torch.Tensor,
) -> torch.Tensor:
    r = max_pool3d_with_indices_backward(
        grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices
    )
    grad_input.resize_(r.shape)
    copy_kernel((grad_input,), (r,))
    return grad_input


@kernel("avg_pool3d")
def avg_pool3d_out(
    self: torch.Tensor,
    kernel_size: list[int],
    stride: list[int],
    padding: list[int],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    out: torch.Tensor,
) -> None:
    """avg_pool3d.out impl (PyTorch's meta has checked the arguments and sized out)."""
    k, s, p, _ = _pool3_params(self, kernel_size, stride, padding, None, "avg_pool3d")
    x, D, H, W = _volumes(self)
    total = out.numel()
    if total == 0:
        return
    o_t = dense_out(out)
    block = block_for(total)
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
        ACC=tl_float_acc(self.dtype),
        BLOCK=block,
    )
    write_back(out, o_t)


@kernel("avg_pool3d_backward")
def avg_pool3d_backward_out(
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
    k, s, p, _ = _pool3_params(self, kernel_size, stride, padding, None, "avg_pool3d_backward")
    alert_not_deterministic("avg_pool3d_backward_privateuseone")
    x, D, H, W = _volumes(self)
    acc = torch.zeros(self.shape, dtype=float_acc(self.dtype), device=self.device)
    g = contiguous(grad_output)
    total = g.numel()
    if total:
        block = block_for(total)
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
            ACC=tl_float_acc(self.dtype),
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


@kernel()
def max_unpool3d_out(
    self: torch.Tensor,
    indices: torch.Tensor,
    output_size: list[int],
    stride: list[int],
    padding: list[int],
    out: torch.Tensor,
) -> torch.Tensor:
    """max_unpool3d.out(self, indices, output_size, stride, padding, out): zeros, with
    each value written at its index into the output volume (of max_pool3d's indices)."""
    if self.dim() not in (4, 5):
        raise RuntimeError(
            f"Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with "
            f"{self.dim()} dimensions."
        )
    if len(output_size) != 3 or len(stride) != 3 or len(padding) != 3:
        raise RuntimeError("max_unpooling3d: output_size, stride and padding must have 3 elements")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
    if list(indices.shape) != list(self.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(self.shape)}) but got indices tensor with shape: {list(indices.shape)}"
        )
    if indices.dtype != torch.long:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    od, oh, ow = (int(v) for v in output_size)
    shape = [*self.shape[:-3], od, oh, ow]
    vol = torch.zeros(shape, dtype=self.dtype, device=self.device)
    flat = vol.view(*shape[:-3], od * oh * ow)
    if self.numel():
        idx = indices.reshape(*self.shape[:-3], -1)  # scatter_ checks the bounds
        flat.scatter_(-1, idx, self.reshape(*self.shape[:-3], -1))
    write_result(out, vol)
    return out


@kernel()
def max_unpool3d(
    self: torch.Tensor,
    indices: torch.Tensor,
    output_size: list[int],
    stride: list[int],
    padding: list[int],
) -> torch.Tensor:
    out = torch.empty(0, dtype=self.dtype, device=self.device)
    return max_unpool3d_out(self, indices, output_size, stride, padding, out)
