"""1x1 convolutions of NCHW tensors (no padding, one group) as batched matrix products
on the matmul kernel, reading and writing NCHW in place.

With P the pixels of an image and x[n] its (C x P) matrix (channel stride P, pixel
stride 1):

  forward  y[n]  = W (CO x C) @ x[n] + bias        (W broadcast over the batch)
  dgrad    dx[n] = W^T (C x CO) @ dy[n]
  wgrad    dW    = sum_n dy[n] (CO x P) @ x[n]^T   (float32 slices per image, then
                                                   their sum: deterministic)

The implicit GEMM (conv_igemm.py) wants channels innermost and copies an NCHW tensor to
channels_last and its result back: for a 1x1 convolution those copies cost more than the
product (ResNet-50's 1x1 layers at batch 32 on an H100: 0.21 ms against cuDNN's 0.03 at
256->64 channels, 56x56). A strided one (ResNet's 1x1 stride-2 shortcuts) is the
same product over the subsampled input x[:, :, ::s, ::s], copied out first (a quarter of
x at stride 2); its input gradient is that product's, written into the strided pixels of
a zeroed dx. Padded, grouped and channels_last convolutions stay on the implicit GEMM.
"""

import math

import torch

from .matmul import _bmm
from .reduction import sum_slices


def is_nchw_pointwise(x, w, stride, padding, groups, transposed):
    """Whether conv(x, w) is a 1x1, unpadded, single-group convolution of an
    NCHW-contiguous float16/bfloat16 input with an NCHW result (PyTorch's memory-format
    rule). float32 stays on the implicit GEMM, which follows cudnn.allow_tf32 as CUDA's
    convolutions do (the matmul kernel follows the matmul precision instead)."""
    return (
        not transposed
        and groups == 1
        and x.dim() >= 3
        and all(k == 1 for k in w.shape[2:])
        and all(p == 0 for p in padding)
        and x.is_contiguous()
        and w.is_contiguous()
        and x.dtype in (torch.float16, torch.bfloat16)
    )


def _strided_pixels(stride):
    """The index of the pixels a 1x1 convolution of `stride` reads: (:, :, ::s0, ...)."""
    return (slice(None), slice(None), *(slice(None, None, s) for s in stride))


def subsample(x, stride):
    """The pixels of x a 1x1 convolution of `stride` reads, as a contiguous tensor."""
    return x if all(s == 1 for s in stride) else x[_strided_pixels(stride)].contiguous()


def _image_matrices(t):
    """(t, (N, C, P), strides) of a contiguous (N, C, *spatial) tensor."""
    n, c = t.shape[0], t.shape[1]
    p = math.prod(t.shape[2:])
    return (t, (n, c, p), (c * p, p, 1))


def pointwise_forward(x, w, bias, stride):
    x = subsample(x, stride)
    n, co = x.shape[0], w.shape[0]
    y = torch.empty((n, co, *x.shape[2:]), dtype=x.dtype, device=x.device)
    if y.numel() == 0:
        return y
    xm = _image_matrices(x)
    c, p = xm[1][1], xm[1][2]
    wm = (w, (n, co, c), (0, c, 1))
    b = (bias, (n, co, p), (0, bias.stride(0), 0)) if bias is not None else None
    _bmm(wm, xm, _image_matrices(y), b, beta=1.0 if bias is not None else 0.0)
    return y


def pointwise_input_grad(dy, w, in_shape, stride):
    n, co, c = dy.shape[0], w.shape[0], w.shape[1]
    strided = any(s != 1 for s in stride)
    shape = (n, c, *dy.shape[2:]) if strided else tuple(in_shape)
    dx = torch.empty(shape, dtype=dy.dtype, device=dy.device)
    if dx.numel() == 0:
        return torch.zeros(tuple(in_shape), dtype=dy.dtype, device=dy.device) if strided else dx
    wt = (w, (n, c, co), (0, 1, c))
    _bmm(wt, _image_matrices(dy.contiguous()), _image_matrices(dx))
    if not strided:
        return dx
    full = torch.zeros(tuple(in_shape), dtype=dy.dtype, device=dy.device)
    full[_strided_pixels(stride)] = dx
    return full


def wgrad_fits(dy, x):
    """Whether the per-image float32 slices of the weight gradient stay small beside the
    activations (early layers: many pixels, few channels); else the implicit GEMM."""
    n, co, c = dy.shape[0], dy.shape[1], x.shape[1]
    p = math.prod(dy.shape[2:])  # the pixels the product reads (x's, subsampled)
    return dy.is_contiguous() and 4 * n * co * c * 4 <= n * (co + c) * p * dy.element_size()


def pointwise_weight_grad(dy, x, w_shape):
    n, co, c = dy.shape[0], w_shape[0], w_shape[1]
    p = math.prod(x.shape[2:])
    if n == 0 or p == 0:
        return torch.zeros(w_shape, dtype=dy.dtype, device=dy.device)
    acc = torch.float64 if dy.dtype == torch.float64 else torch.float32
    slices = torch.empty((n, co, c), dtype=acc, device=dy.device)
    xt = (x, (n, p, c), (c * p, 1, p))  # x[n]^T
    _bmm(_image_matrices(dy), xt, slices)
    # their sum over the images, rounded once into dy's dtype by the reduction's store
    # (a sum then a cast were two launches: 36 of ResNet-50's kernels a step)
    return sum_slices(slices, dy.dtype).reshape(w_shape)
