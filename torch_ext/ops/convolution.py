"""Convolution, 1-d to 3-d, plain and transposed, any groups, stride,
padding, dilation and output padding (plain ops, convention (3)):

  convolution_overrideable(input, weight, bias, stride, padding, dilation,
                           transposed, output_padding, groups) -> out
  convolution_backward_overrideable(grad_output, input, weight, stride,
      padding, dilation, transposed, output_padding, groups, output_mask)
      -> (grad_input, grad_weight, grad_bias)   (None where not asked for)

PyTorch sends every convolution of a PrivateUse1 tensor to these two. They
run Triton kernels (no column buffers, no host syncs):

  conv_igemm.py      the plain forward and its adjoint gather (input gradient; the
                     transposed forward) as one implicit GEMM over channels-inner
                     operands (NCHW tensors copied to channels-last and back), bias fused
  conv_igemm_bwd.py  the weight gradient, likewise (ordered slices, no atomics)
  conv_depthwise.py  groups == in_channels: direct kernels for all three, reading
                     every operand in place through its strides
  conv_gemm.py       1x1 NCHW convolutions (no padding): batched matrix products on
                     the matmul kernel, NCHW read and written in place
  conv_igemm_flat.py few input channels (a 3-channel stem): the forward and the weight
                     gradient reducing over (last tap, channel) runs together

A transposed convolution's forward is the plain convolution's input gradient,
its input gradient the plain forward; its weight gradient swaps the roles of
input and grad_output.

The im2col / col2im kernels below serve F.unfold / F.fold:

  im2col: cols[n, c*K + k, g] = im[n, c, g*stride - padding + k*dilation]  (0 outside)
  col2im: its adjoint, a gather (deterministic, no atomics).
"""

import math
import torch
import triton
import triton.language as tl

from ._common import tl_float_acc
from ._launch import cdiv, launch
from .copy import copy_kernel
from ._common import block_for
from ._common import contiguous
from ._common import split3, store_masked, suggest_memory_format
from ._declare import kernel
from ._common import pad3
from ._common import MAX_SPATIAL
from .conv_igemm import channels_last_view, conv_format, conv_forward, conv_scatter
from .conv_depthwise import dw_forward, dw_input_grad, dw_weight_grad, is_depthwise
from .conv_igemm_bwd import conv_weight_grad
from .conv_igemm_flat import flat_fits, flat_forward, flat_weight_grad
from .conv_gemm import is_nchw_pointwise, pointwise_forward, pointwise_input_grad
from .conv_gemm import cl_pointwise_forward, cl_pointwise_input_grad, is_cl_pointwise
from .conv_gemm import is_pointwise_wgrad, pointwise_weight_grad, subsample


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
    k0, k1, k2 = split3(ck % KP, K1, K2)
    g0, g1, g2 = split3(g, G1, G2)
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
    i0, i1, i2 = split3(i, I1, I2)
    acc = tl.zeros((BLOCK,), ACC)  # float32, float64 for float64
    for k in range(0, KP):
        k0, k1, k2 = split3(k, K1, K2)
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
    store_masked(im, e, acc, mask)


def _geometry(im_shape, grid_shape, kernel, stride, padding, dilation):
    im, grid, k = pad3(im_shape, 1), pad3(grid_shape, 1), pad3(kernel, 1)
    s, p, d = pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)
    return im, grid, k, s, p, d


def _im2col(x, grid_shape, kernel, stride, padding, dilation):
    """x (N, C, *im) -> cols (N, C*prod(kernel), prod(grid))."""
    x = contiguous(x)
    N, C = x.shape[:2]
    im, grid, k, s, p, d = _geometry(x.shape[2:], grid_shape, kernel, stride, padding, dilation)
    KP, GP = math.prod(k), math.prod(grid)
    cols = torch.empty((N, C * KP, GP), dtype=x.dtype, device=x.device)
    total = cols.numel()
    if total:
        block = block_for(total)
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
    cols = contiguous(cols)
    N = cols.shape[0]
    im, grid, k, s, p, d = _geometry(im_shape, grid_shape, kernel, stride, padding, dilation)
    out = torch.empty([N, C] + list(im_shape), dtype=dtype, device=cols.device)
    total = out.numel()
    if total:
        block = block_for(total)
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
            ACC=tl_float_acc(dtype),
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


def in_format(t: torch.Tensor | None, fmt: torch.memory_format) -> torch.Tensor | None:
    """`t` laid out in `fmt` (copied only where a kernel chose another layout): a
    convolution's outputs and gradients are in conv_format(input, weight), as on
    CUDA, whichever kernel ran; the fake tensors torch.compile traces with say the
    same (torch_ext/inductor.py)."""
    if t is None or t.is_contiguous(memory_format=fmt):
        return t
    return t.contiguous(memory_format=fmt)


@kernel()
def convolution_overrideable(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    transposed: bool,
    output_padding: list[int],
    groups: int,
) -> torch.Tensor:
    out = _forward(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )
    return in_format(out, conv_format(input, weight))


def _forward(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    _check(input, weight, groups, transposed)
    g = groups
    in_sp, k = list(input.shape[2:]), list(weight.shape[2:])
    out_sp = _out_shape(in_sp, k, stride, padding, dilation, transposed, output_padding)
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(
            f"torch_ext: convolution output size {out_sp} is too small (input {in_sp}, kernel {k})"
        )
    if is_depthwise(input, weight, g, transposed):
        return dw_forward(input, weight, bias, stride, padding, dilation, out_sp)
    if is_nchw_pointwise(input, weight, stride, padding, g, transposed):
        return pointwise_forward(input, weight, bias, stride)
    if not transposed and flat_fits(weight.shape[1], k, dilation, g):
        # few input channels (a stem): the reduction over (last tap, channel) runs
        fmt = conv_format(input, weight)
        return flat_forward(input, weight, bias, stride, padding, dilation, out_sp, fmt)
    if is_cl_pointwise(input, weight, padding, g, transposed):  # or one product over pixels
        return cl_pointwise_forward(
            input, weight, bias, stride,
            lambda: conv_forward(input, weight, bias, stride, padding, dilation, g, out_sp),
        )  # fmt: skip
    if not transposed:
        # implicit GEMM, bias fused, input read in place by strides
        return conv_forward(input, weight, bias, stride, padding, dilation, g, out_sp)
    # the adjoint gather, bias fused
    return conv_scatter(input, weight, bias, stride, padding, dilation, g, out_sp)


@kernel()
def convolution_backward_overrideable(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    transposed: bool,
    output_padding: list[int],
    groups: int,
    output_mask: list[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    g, in_sp = groups, list(input.shape[2:])
    gout = grad_output
    grad_input = grad_weight = grad_bias = None
    geom = (stride, padding, dilation, g)
    if is_depthwise(input, weight, g, transposed):
        if output_mask[0]:
            grad_input = dw_input_grad(gout, weight, stride, padding, dilation, input.shape)
        if output_mask[1]:
            grad_weight = dw_weight_grad(gout, input, weight.shape, stride, padding, dilation)
    elif is_nchw_pointwise(input, weight, stride, padding, g, transposed):
        if output_mask[0]:
            grad_input = pointwise_input_grad(gout, weight, input.shape, stride)
        if output_mask[1]:
            grad_weight = pointwise_weight_grad(gout, subsample(input, stride), weight.shape)
    elif not transposed:
        fmt = conv_format(gout, weight)
        if output_mask[0] and output_mask[1]:
            gout = channels_last_view(gout)  # laid out once for both kernels
        if output_mask[0] and is_cl_pointwise(input, weight, padding, g, transposed):
            grad_input = cl_pointwise_input_grad(
                gout, weight, input.shape, stride,
                lambda: conv_scatter(gout, weight, None, *geom, in_sp, fmt),
            )  # fmt: skip
        elif output_mask[0]:
            grad_input = conv_scatter(gout, weight, None, *geom, in_sp, fmt)
        if output_mask[1] and flat_fits(weight.shape[1], weight.shape[2:], dilation, g):
            grad_weight = flat_weight_grad(gout, input, weight.shape, stride, padding, dilation)
        elif output_mask[1] and is_pointwise_wgrad(input, weight, padding, g, transposed):
            grad_weight = pointwise_weight_grad(gout, subsample(input, stride), weight.shape)
        elif output_mask[1]:
            cl = suggest_memory_format(weight) != torch.contiguous_format
            grad_weight = conv_weight_grad(gout, input, weight.shape, *geom, cl)
    else:
        # the transposed convolution's adjoint is the plain forward
        if output_mask[0]:
            grad_input = conv_forward(gout, weight, None, *geom, in_sp)
        if output_mask[1]:
            grad_weight = conv_weight_grad(input, gout, weight.shape, *geom)
    if output_mask[2]:
        grad_bias = gout.sum([0] + list(range(2, gout.dim())))
    fmt = conv_format(input, weight)
    return in_format(grad_input, fmt), in_format(grad_weight, fmt), grad_bias


# -- im2col / col2im (plain ops): F.unfold / F.fold ------------------------------
#   im2col(self, kernel_size, dilation, padding, stride) -> (N, C*kh*kw, L)
#   col2im(self, output_size, kernel_size, dilation, padding, stride) -> (N, C, H, W)
#   and their .out(..., out); a batch of one may come without its batch dim.
# The kernels are the convolutions' (_im2col / _col2im above).


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
def im2col(
    self: torch.Tensor,
    kernel_size: list[int],
    dilation: list[int],
    padding: list[int],
    stride: list[int],
) -> torch.Tensor:
    grid = _im2col_shape(self, kernel_size, dilation, padding, stride)
    return _im2col_into(self, kernel_size, dilation, padding, stride, grid)


@kernel()
def im2col_out(
    self: torch.Tensor,
    kernel_size: list[int],
    dilation: list[int],
    padding: list[int],
    stride: list[int],
    out: torch.Tensor,
) -> torch.Tensor:
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
def col2im(
    self: torch.Tensor,
    output_size: list[int],
    kernel_size: list[int],
    dilation: list[int],
    padding: list[int],
    stride: list[int],
) -> torch.Tensor:
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
def col2im_out(
    self: torch.Tensor,
    output_size: list[int],
    kernel_size: list[int],
    dilation: list[int],
    padding: list[int],
    stride: list[int],
    out: torch.Tensor,
) -> torch.Tensor:
    im = col2im(self, output_size, kernel_size, dilation, padding, stride)
    out.resize_(im.shape)  # a plain out= op sizes its own out
    copy_kernel((out,), (im,))
    return out
