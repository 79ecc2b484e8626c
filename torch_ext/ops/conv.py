"""Convolution, 1-d to 3-d, plain and transposed, any groups, stride,
padding, dilation and output padding (plain ops, convention (3)):

  convolution_overrideable(input, weight, bias, stride, padding, dilation,
                           transposed, output_padding, groups) -> out
  convolution_backward_overrideable(grad_output, input, weight, stride,
      padding, dilation, transposed, output_padding, groups, output_mask)
      -> (grad_input, grad_weight, grad_bias)   (None where not asked for)

PyTorch sends every convolution of a PrivateUse1 tensor to these two. Both
are im2col / col2im (Triton kernels below) around batched matrix products
(our bmm): with "im" the side of the kernel window (the input of a
convolution, the output of a transposed one) and "grid" the side of the
window positions,

  im2col: cols[n, c*K + k, g] = im[n, c, g*stride - padding + k*dilation]  (0 outside)
  col2im: its adjoint, a gather (deterministic, no atomics): each im element
          sums the columns whose window covers it.
"""

import math

import torch
import triton
import triton.language as tl

from ._launch import cdiv, launch
from .copy import copy_kernel
from .index import _block
from .reduction import _contiguous
from ._common import kernel

MAX_SPATIAL = 3


@triton.jit
def _split3(v, S1, S2):
    return v // (S1 * S2), (v // S2) % S1, v % S2


@triton.jit
def _store(ptr, offs, v, mask):
    # Through float32: Triton's interpreter casts to bf16 bitwise otherwise.
    if ptr.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)
    tl.store(ptr + offs, v.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def _im2col_kernel(
    im,
    cols,
    total,
    CK,
    KP,
    GP,
    I0,
    I1,
    I2,
    G1,
    G2,
    K1,
    K2,
    s0,
    s1,
    s2,
    p0,
    p1,
    p2,
    d0,
    d1,
    d2,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    g = e % GP
    ck = (e // GP) % CK
    n = e // (GP * CK)
    c = ck // KP
    k0, k1, k2 = _split3(ck % KP, K1, K2)
    g0, g1, g2 = _split3(g, G1, G2)
    i0 = g0 * s0 - p0 + k0 * d0
    i1 = g1 * s1 - p1 + k1 * d1
    i2 = g2 * s2 - p2 + k2 * d2
    ok = mask & (i0 >= 0) & (i0 < I0) & (i1 >= 0) & (i1 < I1) & (i2 >= 0) & (i2 < I2)
    C = CK // KP
    src = ((n * C + c) * I0 + i0) * (I1 * I2) + i1 * I2 + i2
    v = tl.load(im + src, mask=ok, other=0)
    tl.store(cols + e, v, mask=mask)


@triton.jit
def _col2im_kernel(
    cols,
    im,
    total,
    C,
    KP,
    GP,
    I0,
    I1,
    I2,
    G0,
    G1,
    G2,
    K1,
    K2,
    s0,
    s1,
    s2,
    p0,
    p1,
    p2,
    d0,
    d1,
    d2,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    IP = I0 * I1 * I2
    i = e % IP
    nc = e // IP
    i0, i1, i2 = _split3(i, I1, I2)
    acc = tl.zeros((BLOCK,), ACC)  # float32, float64 for float64
    for k in range(0, KP):
        k0, k1, k2 = _split3(k, K1, K2)
        t0 = i0 + p0 - k0 * d0
        t1 = i1 + p1 - k1 * d1
        t2 = i2 + p2 - k2 * d2
        g0 = t0 // s0
        g1 = t1 // s1
        g2 = t2 // s2
        ok = (
            mask
            & (t0 >= 0)
            & (t1 >= 0)
            & (t2 >= 0)
            & (g0 * s0 == t0)
            & (g1 * s1 == t1)
            & (g2 * s2 == t2)
            & (g0 < G0)
            & (g1 < G1)
            & (g2 < G2)
        )
        src = (nc * KP + k) * GP + (g0 * G1 + g1) * G2 + g2
        acc += tl.load(cols + src, mask=ok, other=0).to(ACC)
    _store(im, e, acc, mask)


def _pad3(v, fill):
    v = list(v)
    return [fill] * (MAX_SPATIAL - len(v)) + v


def _geometry(im_shape, grid_shape, kernel, stride, padding, dilation):
    im, grid, k = _pad3(im_shape, 1), _pad3(grid_shape, 1), _pad3(kernel, 1)
    s, p, d = _pad3(stride, 1), _pad3(padding, 0), _pad3(dilation, 1)
    return im, grid, k, s, p, d


def _im2col(x, grid_shape, kernel, stride, padding, dilation):
    """x (N, C, *im) -> cols (N, C*prod(kernel), prod(grid))."""
    x = _contiguous(x)
    N, C = x.shape[:2]
    im, grid, k, s, p, d = _geometry(x.shape[2:], grid_shape, kernel, stride, padding, dilation)
    KP, GP = math.prod(k), math.prod(grid)
    cols = torch.empty((N, C * KP, GP), dtype=x.dtype, device=x.device)
    total = cols.numel()
    if total:
        block = _block(total)
        launch(
            _im2col_kernel,
            (cdiv(total, block),),
            x,
            cols,
            total,
            C * KP,
            KP,
            GP,
            *im,
            grid[1],
            grid[2],
            k[1],
            k[2],
            *s,
            *p,
            *d,
            BLOCK=block,
        )
    return cols


def _col2im(cols, C, im_shape, grid_shape, kernel, stride, padding, dilation, dtype):
    """The adjoint of _im2col: cols (N, C*prod(kernel), prod(grid)) -> (N, C, *im)."""
    cols = _contiguous(cols)
    N = cols.shape[0]
    im, grid, k, s, p, d = _geometry(im_shape, grid_shape, kernel, stride, padding, dilation)
    out = torch.empty([N, C] + list(im_shape), dtype=dtype, device=cols.device)
    total = out.numel()
    if total:
        block = _block(total)
        launch(
            _col2im_kernel,
            (cdiv(total, block),),
            cols,
            out,
            total,
            C,
            math.prod(k),
            math.prod(grid),
            *im,
            *grid,
            k[1],
            k[2],
            *s,
            *p,
            *d,
            ACC=tl.float64 if dtype == torch.float64 else tl.float32,
            BLOCK=block,
        )
    return out


def _check(input, weight, groups, transposed):
    nd = input.dim() - 2
    if not 1 <= nd <= MAX_SPATIAL or weight.dim() != input.dim():
        raise NotImplementedError(
            f"torch_ext: convolution of a {input.dim()}-d input with a {weight.dim()}-d weight "
            f"(1 to {MAX_SPATIAL} spatial dims, batched)"
        )
    if input.dtype != weight.dtype:
        raise RuntimeError(
            f"torch_ext: convolution input is {input.dtype} but weight is {weight.dtype}"
        )
    cin = input.shape[1]
    wc = weight.shape[0] if transposed else weight.shape[1] * groups
    if cin != wc:
        raise RuntimeError(f"torch_ext: convolution expected input with {wc} channels, got {cin}")


def _out_shape(in_sp, k, stride, padding, dilation, transposed, output_padding):
    if transposed:
        return [
            (i - 1) * s - 2 * p + d * (kk - 1) + op + 1
            for i, kk, s, p, d, op in zip(in_sp, k, stride, padding, dilation, output_padding)
        ]
    return [
        (i + 2 * p - d * (kk - 1) - 1) // s + 1
        for i, kk, s, p, d in zip(in_sp, k, stride, padding, dilation)
    ]


@kernel()
def convolution_overrideable(
    input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
):
    _check(input, weight, groups, transposed)
    N, g = input.shape[0], groups
    in_sp, k = list(input.shape[2:]), list(weight.shape[2:])
    out_sp = _out_shape(in_sp, k, stride, padding, dilation, transposed, output_padding)
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(
            f"torch_ext: convolution output size {out_sp} is too small (input {in_sp}, kernel {k})"
        )
    KP, IP, OP = math.prod(k), math.prod(in_sp), math.prod(out_sp)
    if not transposed:
        cout, cin_g = weight.shape[0], weight.shape[1]
        cols = _im2col(input, out_sp, k, stride, padding, dilation)  # (N, C*KP, OP)
        w = weight.reshape(1, g, cout // g, cin_g * KP)
        out = torch.matmul(w, cols.view(N, g, cin_g * KP, OP))  # (N, g, cout/g, OP)
        out = out.reshape([N, cout] + out_sp)
    else:
        cin, cout_g = weight.shape[0], weight.shape[1]
        w = weight.reshape(1, g, cin // g, cout_g * KP).transpose(-1, -2)
        x = _contiguous(input).view(N, g, cin // g, IP)
        cols = torch.matmul(w, x)  # (N, g, cout/g*KP, IP)
        out = _col2im(
            cols.reshape(N, g * cout_g * KP, IP),
            g * cout_g,
            out_sp,
            in_sp,
            k,
            stride,
            padding,
            dilation,
            input.dtype,
        )
    if bias is not None:
        out = out + bias.reshape([1, -1] + [1] * len(out_sp))
    return _contiguous(out)


@kernel()
def convolution_backward_overrideable(
    grad_output,
    input,
    weight,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    output_mask,
):
    N, g = input.shape[0], groups
    in_sp, k = list(input.shape[2:]), list(weight.shape[2:])
    out_sp = list(grad_output.shape[2:])
    KP, IP, OP = math.prod(k), math.prod(in_sp), math.prod(out_sp)
    gout = _contiguous(grad_output)
    grad_input = grad_weight = grad_bias = None
    if not transposed:
        cout, cin_g = weight.shape[0], weight.shape[1]
        go = gout.view(N, g, cout // g, OP)
        if output_mask[0]:
            w = weight.reshape(1, g, cout // g, cin_g * KP).transpose(-1, -2)
            gcols = torch.matmul(w, go)  # (N, g, cin_g*KP, OP)
            grad_input = _col2im(
                gcols.reshape(N, g * cin_g * KP, OP),
                g * cin_g,
                in_sp,
                out_sp,
                k,
                stride,
                padding,
                dilation,
                input.dtype,
            )
        if output_mask[1]:
            cols = _im2col(input, out_sp, k, stride, padding, dilation).view(N, g, cin_g * KP, OP)
            gw = torch.matmul(go, cols.transpose(-1, -2)).sum(0)  # (g, cout/g, cin_g*KP)
            grad_weight = _contiguous(gw.reshape(weight.shape))
    else:
        cin, cout_g = weight.shape[0], weight.shape[1]
        # The transposed convolution's output is the im side: its gradient's
        # windows, laid out on the input grid.
        gcols = _im2col(gout, in_sp, k, stride, padding, dilation).view(N, g, cout_g * KP, IP)
        if output_mask[0]:
            w = weight.reshape(1, g, cin // g, cout_g * KP)
            grad_input = _contiguous(torch.matmul(w, gcols).reshape(input.shape))
        if output_mask[1]:
            x = _contiguous(input).view(N, g, cin // g, IP)
            gw = torch.matmul(x, gcols.transpose(-1, -2)).sum(0)  # (g, cin/g, cout_g*KP)
            grad_weight = _contiguous(gw.reshape(weight.shape))
    if output_mask[2]:
        grad_bias = gout.sum([0] + list(range(2, gout.dim())))
    return grad_input, grad_weight, grad_bias


# -- batch norm (plain ops, convention (3)), from the device ops above ----------
#   native_batch_norm(input, weight?, bias?, running_mean?, running_var?,
#                     training, momentum, eps) -> (out, save_mean, save_invstd)
#   native_batch_norm_backward(grad_out, input, weight?, running_mean?,
#       running_var?, save_mean?, save_invstd?, train, eps, output_mask)
# Statistics in float32 for fp16/bf16 inputs (as torch's CUDA kernels).


def _stat_dtype(dtype):
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _per_channel(t, ndim):
    return t.reshape([1, -1] + [1] * (ndim - 2))


@kernel()
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    if input.dim() < 2:
        raise RuntimeError(
            f"torch_ext: batch_norm expects an input of at least 2 dims, got {input.dim()}"
        )
    sd = _stat_dtype(input.dtype)
    dims = [0] + list(range(2, input.dim()))
    x = input.to(sd)
    if training:
        var, mean = torch.var_mean(x, dims, correction=0)
        invstd = torch.rsqrt(var + eps)
        n = input.numel() // input.shape[1]
        with torch.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
            if running_var is not None:
                unbiased = var * (n / max(n - 1, 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        use_mean, use_invstd = mean, invstd
        save_mean, save_invstd = mean, invstd
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "torch_ext: batch_norm in eval mode needs running_mean and running_var"
            )
        use_mean = running_mean.to(sd)
        use_invstd = torch.rsqrt(running_var.to(sd) + eps)
        save_mean = torch.empty(0, dtype=sd, device=input.device)
        save_invstd = torch.empty(0, dtype=sd, device=input.device)
    y = (x - _per_channel(use_mean, x.dim())) * _per_channel(use_invstd, x.dim())
    if weight is not None:
        y = y * _per_channel(weight.to(sd), x.dim())
    if bias is not None:
        y = y + _per_channel(bias.to(sd), x.dim())
    return _contiguous(y.to(input.dtype)), save_mean, save_invstd


@kernel()
def native_batch_norm_backward(
    grad_out,
    input,
    weight,
    running_mean,
    running_var,
    save_mean,
    save_invstd,
    train,
    eps,
    output_mask,
):
    sd = _stat_dtype(input.dtype)
    nd = input.dim()
    dims = [0] + list(range(2, nd))
    x, g = input.to(sd), grad_out.to(sd)
    if train:
        mean, invstd = save_mean.to(sd), save_invstd.to(sd)
    else:
        mean, invstd = running_mean.to(sd), torch.rsqrt(running_var.to(sd) + eps)
    xhat = (x - _per_channel(mean, nd)) * _per_channel(invstd, nd)
    w = weight.to(sd) if weight is not None else None
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        scale = _per_channel(invstd if w is None else invstd * w, nd)
        if train:
            gm = g.mean(dims, keepdim=True)
            gxm = (g * xhat).mean(dims, keepdim=True)
            grad_input = (g - gm - xhat * gxm) * scale
        else:
            grad_input = g * scale
        grad_input = _contiguous(grad_input.to(input.dtype))
    if output_mask[1]:
        grad_weight = (g * xhat).sum(dims).to(weight.dtype if weight is not None else input.dtype)
    if output_mask[2]:
        grad_bias = g.sum(dims).to(weight.dtype if weight is not None else input.dtype)
    return grad_input, grad_weight, grad_bias


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
def _max_pool_kernel(
    x,
    out,
    idx,
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
    dh,
    dw,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, oh, ow = _split3(e, OH, OW)
    best = tl.full((BLOCK,), float("-inf"), ACC)
    bidx = tl.full((BLOCK,), -1, tl.int64)
    for k in range(0, KH * KW):
        ih = oh * sh - ph + (k // KW) * dh
        iw = ow * sw - pw + (k % KW) * dw
        ok = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        v = tl.load(x + plane * H * W + ih * W + iw, mask=ok, other=0).to(ACC)
        take = ok & ((v > best) | (v != v) | (bidx < 0))
        best = tl.where(take, v, best)
        bidx = tl.where(take, ih * W + iw, bidx)
    _store(out, e, best, mask)
    tl.store(idx + e, bidx, mask=mask)


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
    plane, oh, ow = _split3(e, OH, OW)
    hs, ws, he, we, d = _avg_window(oh, ow, H, W, KH, KW, sh, sw, ph, pw, COUNT_PAD, divisor)
    acc = tl.zeros((BLOCK,), ACC)
    for k in range(0, KH * KW):
        ih = hs + k // KW
        iw = ws + k % KW
        ok = mask & (ih < he) & (iw < we)
        acc += tl.load(x + plane * H * W + ih * W + iw, mask=ok, other=0).to(ACC)
    _store(out, e, acc / d.to(ACC), mask)


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
    plane, ih, iw = _split3(e, H, W)
    acc = tl.zeros((BLOCK,), ACC)
    for k in range(0, KH * KW):
        th = ih + ph - k // KW
        tw = iw + pw - k % KW
        oh = th // sh
        ow = tw // sw
        ok = (
            mask & (th >= 0) & (tw >= 0) & (oh * sh == th) & (ow * sw == tw) & (oh < OH) & (ow < OW)
        )
        hs, ws, he, we, d = _avg_window(oh, ow, H, W, KH, KW, sh, sw, ph, pw, COUNT_PAD, divisor)
        inside = (ih >= hs) & (ih < he) & (iw >= ws) & (iw < we)
        v = tl.load(g + plane * OH * OW + oh * OW + ow, mask=ok & inside, other=0).to(ACC)
        acc += v / tl.maximum(d, 1).to(ACC)
    _store(gin, e, acc, mask)


def _planes(x):
    x = _contiguous(x)
    return x, x.shape[-2], x.shape[-1]


def _dense(out):
    """`out` if contiguous, else a contiguous temporary for _write_back."""
    return (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )


def _write_back(out, target):
    if target is not out:
        copy_kernel((out,), (target,))


@kernel("max_pool2d_with_indices")
def max_pool2d_with_indices_out(
    self, kernel_size, stride, padding, dilation, ceil_mode, out, indices
):
    kh, kw, sh, sw, ph, pw = _pool_params(kernel_size, stride, padding)
    dh, dw = _pair(dilation)
    x, H, W = _planes(self)
    OH, OW = out.shape[-2], out.shape[-1]
    total = out.numel()
    if total == 0:
        return

    o_t, i_t = _dense(out), _dense(indices)
    block = _block(total)
    launch(
        _max_pool_kernel,
        (cdiv(total, block),),
        x,
        o_t,
        i_t,
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
        dh,
        dw,
        ACC=tl.float64 if x.dtype == torch.float64 else tl.float32,
        BLOCK=block,
    )
    _write_back(out, o_t)
    _write_back(indices, i_t)


@kernel("max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward_out(
    grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices, grad_input
):
    from .copy import fill_
    from .index import _gather_scatter

    planes = self.numel() // (self.shape[-2] * self.shape[-1]) if self.numel() else 0

    gi = _dense(grad_input)
    fill_(gi, 0)
    if grad_output.numel():
        g2 = _contiguous(grad_output).reshape(planes, -1)
        i2 = _contiguous(indices).reshape(planes, -1)
        _gather_scatter(i2, g2, gi.view(planes, -1), 1, 2)  # add (fp16/bf16 via float32)
    _write_back(grad_input, gi)


@kernel("avg_pool2d")
def avg_pool2d_out(
    self, kh, kw, sh, sw, ph, pw, ceil_mode, count_include_pad, divisor_override, out
):
    # The meta's precomputed kernel_size, stride and padding arrive as ints.
    x, H, W = _planes(self)
    OH, OW = out.shape[-2], out.shape[-1]
    total = out.numel()
    if total == 0:
        return

    o_t = _dense(out)
    block = _block(total)
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
        ACC=tl.float64 if self.dtype == torch.float64 else tl.float32,
        BLOCK=block,
    )
    _write_back(out, o_t)


@kernel("avg_pool2d_backward")
def avg_pool2d_backward_out(
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
    kh, kw, sh, sw, ph, pw = _pool_params(kernel_size, stride, padding)
    H, W = self.shape[-2], self.shape[-1]
    g = _contiguous(grad_output)
    OH, OW = g.shape[-2], g.shape[-1]
    total = grad_input.numel()
    if total == 0:
        return

    gi = _dense(grad_input)
    block = _block(total)
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
        ACC=tl.float64 if self.dtype == torch.float64 else tl.float32,
        BLOCK=block,
    )
    _write_back(grad_input, gi)


# -- nearest upsampling, 2-d (structured impls, convention (2)) ----------------
#   upsample_nearest2d.out impl: (self, output_size, scales_h, scales_w, out)
#   upsample_nearest2d_backward.grad_input impl:
#       (grad_output, output_size, input_size, scales_h, scales_w, grad_input)
# Source row of output row o: floor((o + offset) * scale) (float32, as PyTorch;
# offset 0.5 for "nearest-exact", ops/spatial.py), scale = 1/scales_h when
# given, else in/out; capped at in - 1.  2-d "nearest" copies rows where
# out == in and halves the index where out == 2 * in whatever the scale (as
# PyTorch's CPU kernel, ATen/native/UpSample.h nearest_idx; its 1-d and 3-d
# forward kernels and "nearest-exact" do not).


def _nearest_scale(in_size, out_size, scale, size_rule=False):
    if size_rule and out_size in (in_size, 2 * in_size):
        return in_size / out_size  # 1.0 or 0.5: exact in float32
    return (1.0 / scale) if scale is not None and scale > 0 else in_size / out_size


@triton.jit
def _nearest_src(o, scale, size, offset):
    return tl.minimum(((o.to(tl.float32) + offset) * scale).to(tl.int64), size - 1)


@triton.jit
def _split4(v, S1, S2, S3):
    rest, i2, i3 = _split3(v, S2, S3)
    return rest // S1, rest % S1, i2, i3


@triton.jit
def _upsample_nearest_kernel(
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
    sh,
    sw,
    offset,
    BACKWARD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Planes of (D, H, W): a 2-d op has D = 1, a 1-d op D = H = 1.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = _split4(e, OD, OH, OW)
    src = (
        (plane * D + _nearest_src(od, sd, D, offset)) * H + _nearest_src(oh, sh, H, offset)
    ) * W + _nearest_src(ow, sw, W, offset)
    if BACKWARD:  # x: grad_output (by output element), out: float32/64 grad_input
        v = tl.load(x + e, mask=mask, other=0).to(out.dtype.element_ty)
        tl.atomic_add(out + src, v, mask=mask)
    else:
        tl.store(out + e, tl.load(x + src, mask=mask, other=0), mask=mask)


def _spatial3(shape, nsp):
    """(D, H, W) of an N-C-spatial shape with nsp spatial dims (1s in front)."""
    return [1] * (3 - nsp) + [int(v) for v in shape[len(shape) - nsp :]]


def _nearest_scales(in_shape, out_shape, scales, exact):
    nsp = len(scales)
    rule = nsp == 2 and not exact
    return [
        float(_nearest_scale(i, o, s, rule))
        for i, o, s in zip(
            _spatial3(in_shape, nsp), _spatial3(out_shape, nsp), [None] * (3 - nsp) + list(scales)
        )
    ]


def upsample_nearest(self, out, scales, exact=False):
    """out (N, C, *out_spatial) from self (N, C, *spatial), 1 to 3 spatial
    dims; scales: the op's optional scales, one per spatial dim; exact:
    "nearest-exact"."""
    x = _contiguous(self)
    nsp = len(scales)
    total = out.numel()
    if total == 0:
        return

    o_t = _dense(out)
    block = _block(total)
    launch(
        _upsample_nearest_kernel,
        (cdiv(total, block),),
        x,
        o_t,
        total,
        *_spatial3(x.shape, nsp),
        *_spatial3(out.shape, nsp),
        *_nearest_scales(x.shape, out.shape, scales, exact),
        0.5 if exact else 0.0,
        BACKWARD=False,
        BLOCK=block,
    )
    _write_back(out, o_t)


def upsample_nearest_backward(grad_output, grad_input, scales, exact=False):
    """The adjoint of upsample_nearest: float32 (float64) atomics, then grad_input."""
    from .copy import fill_

    g = _contiguous(grad_output)
    nsp = len(scales)
    acc_t = torch.float64 if grad_input.dtype == torch.float64 else torch.float32
    acc = torch.empty(grad_input.shape, dtype=acc_t, device=grad_input.device)
    fill_(acc, 0)
    total = g.numel()
    if total:
        block = _block(total)
        launch(
            _upsample_nearest_kernel,
            (cdiv(total, block),),
            g,
            acc,
            total,
            *_spatial3(grad_input.shape, nsp),
            *_spatial3(g.shape, nsp),
            *_nearest_scales(grad_input.shape, g.shape, scales, exact),
            0.5 if exact else 0.0,
            BACKWARD=True,
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


@kernel("upsample_nearest2d")
def upsample_nearest2d_out(self, output_size, scales_h, scales_w, out):
    upsample_nearest(self, out, (scales_h, scales_w))


@kernel("upsample_nearest2d_backward")
def upsample_nearest2d_backward_out(
    grad_output, output_size, input_size, scales_h, scales_w, grad_input
):
    upsample_nearest_backward(grad_output, grad_input, (scales_h, scales_w))


# -- roll (plain op, convention (3)): slices joined by our cat kernel -----------


@kernel()
def roll(self, shifts, dims):
    shifts, dims = list(shifts), list(dims)
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"torch_ext: roll without dims takes one shift, got {len(shifts)}")
        return _contiguous(roll(self.reshape(-1), shifts, [0]).view(self.shape))
    if len(shifts) != len(dims):
        raise RuntimeError(f"torch_ext: roll got {len(shifts)} shifts for {len(dims)} dims")
    out = self
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        s = s % n if n else 0
        if s:
            out = torch.cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return _contiguous(out) if out is not self else _contiguous(self.clone())


@kernel()
def max_unpool2d_out(self, indices, output_size, out):
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
def max_unpool2d(self, indices, output_size):
    out = torch.empty(0, dtype=self.dtype, device=self.device)
    return max_unpool2d_out(self, indices, output_size, out)
