"""1x1 convolutions of NCHW tensors (no padding, one group) as batched matrix products
on the matmul kernel, reading and writing NCHW in place.

With P the pixels of an image and x[n] its (C x P) matrix (channel stride P, pixel
stride 1):

  forward  y[n]  = W (CO x C) @ x[n] + bias        (W broadcast over the batch)
  dgrad    dx[n] = W^T (C x CO) @ dy[n]
  wgrad    dW    = sum_n dy[n] (CO x P) @ x[n]^T   (one kernel whose reduction runs over
                                                   (image, pixel block) items, split into
                                                   float32 slices summed in order:
                                                   deterministic)

The implicit GEMM (conv_igemm.py) wants channels innermost and copies an NCHW tensor to
channels_last and its result back: for a 1x1 convolution those copies cost more than the
product (ResNet-50's 1x1 layers at batch 32 on an H100: 0.21 ms against cuDNN's 0.03 at
256->64 channels, 56x56). A strided one (ResNet's 1x1 stride-2 shortcuts) is the
same product over the subsampled input x[:, :, ::s, ::s], copied out first (a quarter of
x at stride 2); its input gradient is that product's, written into the strided pixels of
a zeroed dx. Padded, grouped and channels_last convolutions stay on the implicit GEMM,
but for the weight gradient of a channels_last 1x1 one: the same kernel, whose strides
read it in place (its images follow each other: one long reduction, no per-image tail).
Maps whose pixels are not a multiple of 8 (7x7: rows not 16-byte aligned, loads not
pipelined) time the implicit GEMM as well, forward and input gradient, and keep the
faster (_rows_or_implicit).

A channels_last 2-d 1x1 convolution is also one product over its pixels: x as its
(N*H*W x C) matrix (a view), y = x @ W^T + bias and dx = dy @ W, each as large as a
transformer's GEMMs and so open to the matrix products' tuned kernels (the TMA kernel on
Hopper). The tuner times that product against the implicit GEMM, forward and input
gradient, and keeps the faster (_faster; the implicit GEMM where nothing is timed).
"""

import math

import torch
import triton
import triton.language as tl

from ._common import as_multiple, float_acc, ncs_strides, pixel_alignment, tl_float_acc
from ._launch import cdiv, launch
from ._tune import tuned
from .conv_igemm import channels_last_view, conv_candidates, conv_forward, conv_precision
from .conv_igemm import conv_scatter
from .conv_igemm import needs_int64
from .conv_igemm_bwd import split_candidates
from .matmul import _bmm, as3
from .reduction import sum_slices


def _pointwise(x, w, padding, groups, transposed):
    """A 1x1, unpadded, single-group float16/bfloat16 convolution. float32 stays on the
    implicit GEMM, which follows the TF32 setting of CUDA's convolutions (the matmul
    kernel follows the matmul precision instead)."""
    return (
        not transposed
        and groups == 1
        and x.dim() >= 3
        and all(k == 1 for k in w.shape[2:])
        and all(p == 0 for p in padding)
        and x.dtype in (torch.float16, torch.bfloat16)
    )


def is_nchw_pointwise(x, w, stride, padding, groups, transposed):
    """Whether conv(x, w) is a _pointwise convolution of an NCHW-contiguous input with an
    NCHW result (PyTorch's memory-format rule): all three products here."""
    return _pointwise(x, w, padding, groups, transposed) and x.is_contiguous() and w.is_contiguous()


def _strided_pixels(stride):
    """The index of the pixels a 1x1 convolution of `stride` reads: (:, :, ::s0, ...)."""
    return (slice(None), slice(None), *(slice(None, None, s) for s in stride))


def subsample(x, stride):
    """The pixels of x a 1x1 convolution of `stride` reads, as a dense tensor in x's
    memory format (contiguous for an NCHW x)."""
    if all(s == 1 for s in stride):
        return x
    return x[_strided_pixels(stride)].clone(memory_format=torch.preserve_format)


def _image_matrices(t):
    """(t, (N, C, P), strides) of a contiguous (N, C, *spatial) tensor."""
    n, c = t.shape[0], t.shape[1]
    p = math.prod(t.shape[2:])
    return (t, (n, c, p), (c * p, p, 1))


def _faster(key, x, runs):
    """runs[name]() for the name the tuner times fastest among `runs` ({name: function},
    the first where nothing is timed)."""
    cfg = tuned("conv", key, [(name,) for name in runs], lambda cfg: runs[cfg[0]](), x.device)
    return runs[cfg[0]]()


def _rows_or_implicit(key, x, p, rows, implicit):
    """rows() (the batched product over NCHW rows of p pixels) or, for maps whose pixels
    are not a multiple of 8 (rows not 16-byte aligned: 7x7 maps load single elements,
    unpipelined), whichever of it and implicit() (the implicit GEMM, through
    channels_last copies) the tuner times faster; rows() where nothing is timed."""
    if p % 8 == 0:
        return rows()
    return _faster(key, x, {"rows": rows, "implicit": implicit})


def _into_strided(dx, in_shape, stride, memory_format=torch.contiguous_format):
    """The input gradient of a strided 1x1 convolution: `dx` (its read pixels') written
    into those pixels of a zeroed tensor of `in_shape`."""
    full = torch.empty(tuple(in_shape), dtype=dx.dtype, device=dx.device,
                       memory_format=memory_format)  # fmt: skip
    full.zero_()
    full[_strided_pixels(stride)] = dx
    return full


def pointwise_forward(x, w, bias, stride):
    nd = x.dim() - 2
    xs = subsample(x, stride)
    n, co = xs.shape[0], w.shape[0]

    def rows():
        y = torch.empty((n, co, *xs.shape[2:]), dtype=x.dtype, device=x.device)
        if y.numel() == 0:
            return y
        xm = _image_matrices(xs)
        c, p = xm[1][1], xm[1][2]
        wm = (w, (n, co, c), (0, c, 1))
        b = (bias, (n, co, p), (0, bias.stride(0), 0)) if bias is not None else None
        _bmm(wm, xm, _image_matrices(y), b, beta=1.0 if bias is not None else 0.0)
        return y

    def implicit():
        out = list(xs.shape[2:])
        return conv_forward(x, w, bias, stride, [0] * nd, [1] * nd, 1, out)  # NCHW: as x

    key = ("pw_fwd", x.dtype, *x.shape, *w.shape, *stride, bias is not None)
    return _rows_or_implicit(key, x, math.prod(xs.shape[2:]), rows, implicit)


def pointwise_input_grad(dy, w, in_shape, stride):
    nd = dy.dim() - 2
    n, co, c = dy.shape[0], w.shape[0], w.shape[1]
    strided = any(s != 1 for s in stride)

    def rows():
        shape = (n, c, *dy.shape[2:]) if strided else tuple(in_shape)
        dx = torch.empty(shape, dtype=dy.dtype, device=dy.device)
        if dx.numel() == 0:
            return torch.zeros(tuple(in_shape), dtype=dy.dtype, device=dy.device) if strided else dx
        wt = (w, (n, c, co), (0, 1, c))
        _bmm(wt, _image_matrices(dy.contiguous()), _image_matrices(dx))
        return _into_strided(dx, in_shape, stride) if strided else dx

    def implicit():
        fmt = torch.contiguous_format
        return conv_scatter(dy, w, None, stride, [0] * nd, [1] * nd, 1, list(in_shape[2:]), fmt)

    key = ("pw_dgrad", dy.dtype, *dy.shape, *w.shape, *stride, *in_shape)
    return _rows_or_implicit(key, dy, math.prod(dy.shape[2:]), rows, implicit)


def is_cl_pointwise(x, w, padding, groups, transposed):
    """Whether conv(x, w) is a _pointwise 2-d convolution of a channels_last input (its
    result channels_last): forward and input gradient are then also one product over
    the pixels (module doc)."""
    return (
        _pointwise(x, w, padding, groups, transposed)
        and x.dim() == 4
        and x.is_contiguous(memory_format=torch.channels_last)
        and not x.is_contiguous()
    )


def _pixels(t):
    """A channels_last (N, C, H, W) tensor as its (N*H*W, C) matrix (a view)."""
    return t.permute(0, 2, 3, 1).reshape(-1, t.shape[1])


def cl_pointwise_forward(x, w, bias, stride, implicit):
    """The forward of an is_cl_pointwise convolution: the product over the (subsampled)
    pixels, or `implicit()`, whichever the tuner keeps."""
    co = w.shape[0]

    def gemm():
        xs = subsample(x, stride)
        y = torch.empty((xs.shape[0], co, *xs.shape[2:]), dtype=x.dtype, device=x.device,
                        memory_format=torch.channels_last)  # fmt: skip
        if y.numel() == 0:
            return y
        ym = _pixels(y)
        b = (bias, (1, ym.shape[0], co), (0, 0, bias.stride(0))) if bias is not None else None
        _bmm(as3(_pixels(xs)), as3(w.reshape(co, -1).t()), as3(ym), b,
             beta=1.0 if bias is not None else 0.0)  # fmt: skip
        return y

    key = ("pw_fwd_cl", x.dtype, *x.shape, *w.shape, *stride, bias is not None)
    return _faster(key, x, {"implicit": implicit, "gemm": gemm})


def cl_pointwise_input_grad(dy, w, in_shape, stride, implicit):
    """The input gradient of an is_cl_pointwise convolution: dy's pixels @ W written into
    the strided pixels of a channels_last dx, or `implicit()`, whichever the tuner keeps."""
    n, co, c = dy.shape[0], w.shape[0], w.shape[1]
    strided = any(s != 1 for s in stride)

    def gemm():
        cl = torch.channels_last
        shape = (n, c, *dy.shape[2:]) if strided else tuple(in_shape)
        dx = torch.empty(shape, dtype=dy.dtype, device=dy.device, memory_format=cl)
        if dx.numel():
            g = dy.contiguous(memory_format=cl)
            _bmm(as3(_pixels(g)), as3(w.reshape(co, c)), as3(_pixels(dx)))
        return _into_strided(dx, in_shape, stride, cl) if strided else dx

    key = ("pw_dgrad_cl", dy.dtype, *dy.shape, *w.shape, *stride, *in_shape)
    return _faster(key, dy, {"implicit": implicit, "gemm": gemm})


def is_pointwise_wgrad(x, w, padding, groups, transposed):
    """Whether conv(x, w) is a _pointwise convolution whose input's spatial dims merge
    into one strided dim (NCHW, channels_last): its weight gradient is
    pointwise_weight_grad's, in any such layout."""
    return _pointwise(x, w, padding, groups, transposed) and ncs_strides(x) is not None


@triton.jit
def _wgrad_1x1_kernel(
    dy, x, out, CO, C, P, PB, items, per, sdN, sdC, sdP, sxN, sxC, sxP, wsp,
    ALIGN: tl.constexpr, UPCAST: tl.constexpr, ACC: tl.constexpr, I64: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    """out[split] (CO x C) = sum over the split's items of dy (CO x BK pixels) @ x^T (BK
    pixels x C); an item is a block of BK pixels of one image (a masked tail in each
    image unless BK divides P). Strides as given: NCHW reads along the pixels (stride
    1), channels_last along the channels. Running NCHW's items over all images' pixels
    at once (no tail; each pixel's image found by a division) made 14x14 and 7x7
    layers slower, not faster (H200: 256->1024 @14 0.05 -> 0.09 ms); channels_last
    images follow each other and come here as one image of N*P pixels."""
    # NCHW: pixels, image and channel strides are multiples of ALIGN (pixel_alignment)
    P, sdN, sdC = as_multiple(P, ALIGN), as_multiple(sdN, ALIGN), as_multiple(sdC, ALIGN)
    sxN, sxC = as_multiple(sxN, ALIGN), as_multiple(sxC, ALIGN)
    tiles_n = tl.cdiv(C, BN)
    rco = (tl.program_id(0) // tiles_n) * BM + tl.arange(0, BM)
    rc = (tl.program_id(0) % tiles_n) * BN + tl.arange(0, BN)
    co_ok = rco < CO
    c_ok = rc < C
    sp = tl.program_id(1)
    kk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), ACC)
    for it in range(sp * per, tl.minimum(sp * per + per, items)):
        n = it // PB
        p = (it - n * PB) * BK + kk
        p_ok = p < P
        if I64:
            n = n.to(tl.int64)
            p = p.to(tl.int64)
        a = tl.load(dy + (n * sdN + p * sdP)[None, :] + rco[:, None] * sdC,
                    mask=co_ok[:, None] & p_ok[None, :], other=0)  # fmt: skip
        b = tl.load(x + (n * sxN + p * sxP)[:, None] + rc[None, :] * sxC,
                    mask=p_ok[:, None] & c_ok[None, :], other=0)  # fmt: skip
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc += tl.dot(a, b, out_dtype=ACC)
    o = out + sp * wsp + rco[:, None] * C + rc[None, :]
    tl.store(o, acc.to(out.dtype.element_ty), mask=co_ok[:, None] & c_ok[None, :])


def _strides(t):
    """(t, its (N, C, pixel) strides), t made contiguous when its pixels are not one
    strided dim."""
    st = ncs_strides(t)
    return (t, st) if st is not None else (t.contiguous(), ncs_strides(t.contiguous()))


def _operands(dy, x, n, p):
    """(dy, its strides, x, its strides, images, pixels an image) as the kernel reads
    them: by their (N, C, pixel) strides; images that follow each other (channels_last,
    or one image) as one of n * p pixels."""
    (dy, dst), (x, xst) = _strides(dy), _strides(x)
    if n == 1 or all(sN == p * sP for sN, _, sP in (dst, xst)):
        dst, xst = ((0, sC, sP) for _, sC, sP in (dst, xst))
        n, p = 1, n * p
    return dy, dst, x, xst, n, p


def pointwise_weight_grad(dy, x, w_shape, cfg=None):
    """dW (w_shape) = sum_n dy[n] @ x[n]^T over dy and (subsampled) x read in place
    by their strides (_operands); the reduction over its items (_wgrad_1x1_kernel) is
    split into slices whose float32 partials one reduction sums in order (one slice:
    written straight into dW). Tiles and slices tuned (`cfg` forces one: tests); NCHW
    maps whose pixels are not a multiple of 4 (7x7: loads of single elements, not
    pipelined) also time copying both to channels_last first (`via` in the config).
    channels_last fp16/bf16 also time one matrix product over the pixels (_gemm_wgrad)."""
    n, p = dy.shape[0], math.prod(x.shape[2:])
    if n == 0 or p == 0:
        return torch.zeros(w_shape, dtype=dy.dtype, device=dy.device)
    direct = _operands(dy, x, n, p)
    if cfg is not None:
        return _wgrad_1x1(dy, x, w_shape, direct, cfg)
    if _gemm_wgrad_fits(dy, w_shape, direct):
        key = ("pw_wgrad_cl", dy.dtype, *dy.shape, *w_shape, *x.shape)
        runs = {"kernel": lambda: _tuned_wgrad(dy, x, w_shape, direct),
                "gemm": lambda: _gemm_wgrad(dy, w_shape, direct)}  # fmt: skip
        return _faster(key, dy, runs)
    return _tuned_wgrad(dy, x, w_shape, direct)


GEMM_WGRAD_CHANNELS = 128  # channels (in and out) from which _gemm_wgrad is timed


def _gemm_wgrad_fits(dy, w_shape, direct):
    """Whether the tuner also times _gemm_wgrad: channels_last fp16/bf16 operands (one
    image of pixels, channels contiguous) and both channel counts at least
    GEMM_WGRAD_CHANNELS, where the product has the matrix products' split K (narrower,
    it takes the skinny tiles without: 64 -> 64 channels at 56x56, one 64 x 64 tile over
    100,352 pixels, ran 0.069 ms against the 1x1 kernel's 0.015, and the tuner kept it,
    H200, session 23). 128 since the warp-specialised product splits K (session 34:
    512 x 128 over 25,088 pixels 17 us as a product, tests_gpu/harness/mm_ws_split.py,
    the 1x1 kernel 18 us in session 31)."""
    _, dst, _, xst, nd, _ = direct
    if dy.dtype not in (torch.float16, torch.bfloat16) or min(w_shape[:2]) < GEMM_WGRAD_CHANNELS:
        return False
    return nd == 1 and dst[1] == 1 and xst[1] == 1


def _gemm_wgrad(dy, w_shape, direct):
    """dW of channels_last operands (one image of pixels, channels contiguous): dy's
    (pixels x CO) matrix, transposed, @ x's (pixels x C), one product with K the pixels,
    open to the matrix products' tuned kernels (split K, TMA)."""
    dyk, (_, sdc, sdp), xk, (_, sxc, sxp), _, pk = direct
    co, c = w_shape[0], w_shape[1]
    out = torch.empty((co, c), dtype=dy.dtype, device=dy.device)
    _bmm((dyk, (1, co, pk), (0, sdc, sdp)), (xk, (1, pk, c), (0, sxp, sxc)), as3(out))
    return out.reshape(w_shape)


def _wgrad_tiles(co, c, cfg):
    """(BLOCK_M, BLOCK_N, programs a slice) of _wgrad_1x1_kernel under `cfg`."""
    bm, bn = min(cfg[0], 128), min(cfg[1], 128)
    return bm, bn, cdiv(co, bm) * cdiv(c, bn)


def _tuned_wgrad(dy, x, w_shape, direct):
    """_wgrad_1x1 at the tiles and slices the tuner keeps."""
    co, c = w_shape[0], w_shape[1]
    _, dst, _, xst, nd, pd = direct
    R = nd * pd
    vias = (0, 1) if dst[2] == 1 and pixel_alignment(pd, (dst, xst)) < 4 else (0,)
    cands = [
        (*t, split, via)
        for via in vias
        for t in conv_candidates(co, c, R, dy.dtype)
        for split in split_candidates(R, _wgrad_tiles(co, c, t)[2])
    ]
    key = ("wgrad1x1", dy.dtype, nd, co, c, pd, dst[2] == 1, xst[2] == 1)
    cfg = tuned("conv", key, cands, lambda cfg: _wgrad_slices(dy, x, w_shape, direct, cfg),
                dy.device)  # fmt: skip
    return _wgrad_1x1(dy, x, w_shape, direct, cfg)


def _wgrad_1x1(dy, x, w_shape, direct, cfg):
    return sum_slices(_wgrad_slices(dy, x, w_shape, direct, cfg), dy.dtype).reshape(w_shape)


def _wgrad_slices(dy, x, w_shape, direct, cfg):
    """The (slices, CO, C) partials of _wgrad_1x1_kernel under `cfg` (one slice: dW's
    dtype, else float32)."""
    n, co, c = dy.shape[0], w_shape[0], w_shape[1]
    bm, bn, work = _wgrad_tiles(co, c, cfg)
    _, _, bk, warps, stages, split, via = cfg
    if via:
        p = math.prod(x.shape[2:])
        dyk, dst, xk, xst, nk, pk = _operands(*(channels_last_view(t) for t in (dy, x)), n, p)
    else:
        dyk, dst, xk, xst, nk, pk = direct
    pb = cdiv(pk, bk)
    items = nk * pb
    per = cdiv(items, split)
    split = cdiv(items, per)
    buf_dtype = dy.dtype if split == 1 else float_acc(dy.dtype)
    buf = torch.empty((split, co, c), dtype=buf_dtype, device=dy.device)
    launch(
        _wgrad_1x1_kernel, (work, split), dyk, xk, buf, co, c, pk, pb, items, per,
        *dst, *xst, buf.stride(0), ALIGN=pixel_alignment(pk, (dst, xst)),
        UPCAST=conv_precision(dy.dtype)[0], ACC=tl_float_acc(dy.dtype), I64=needs_int64(dyk, xk),
        BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages,
    )  # fmt: skip
    return buf
