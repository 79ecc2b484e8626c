"""Nearest and nearest-exact upsampling, 1-d to 3-d (+ backward)."""

import torch
import triton
import triton.language as tl

from .._common import float_acc
from .._launch import cdiv, launch
from ..copy import copy_kernel
from .._common import block_for
from .._common import contiguous
from .._common import dense_out, spatial3, split4, write_back
from ..copy import fill_
from .._declare import kernel

# -- nearest upsampling, 2-d (structured impls, convention (2)) ----------------
#   upsample_nearest2d.out impl: (self, output_size, scales_h, scales_w, out)
#   upsample_nearest2d_backward.grad_input impl:
#       (grad_output, output_size, input_size, scales_h, scales_w, grad_input)
# Source row of output row o: floor((o + offset) * scale) (float32, as PyTorch;
# offset 0.5 for "nearest-exact"), scale = 1/scales_h when
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
    plane, od, oh, ow = split4(e, OD, OH, OW)
    src = (
        (plane * D + _nearest_src(od, sd, D, offset)) * H + _nearest_src(oh, sh, H, offset)
    ) * W + _nearest_src(ow, sw, W, offset)
    if BACKWARD:  # x: grad_output (by output element), out: float32/64 grad_input
        v = tl.load(x + e, mask=mask, other=0).to(out.dtype.element_ty)
        tl.atomic_add(out + src, v, mask=mask)
    else:
        tl.store(out + e, tl.load(x + src, mask=mask, other=0), mask=mask)


def _nearest_scales(in_shape, out_shape, scales, exact):
    nsp = len(scales)
    rule = nsp == 2 and not exact
    return [
        float(_nearest_scale(i, o, s, rule))
        for i, o, s in zip(
            spatial3(in_shape, nsp), spatial3(out_shape, nsp), [None] * (3 - nsp) + list(scales)
        )
    ]


def upsample_nearest(self, out, scales, exact=False):
    """out (N, C, *out_spatial) from self (N, C, *spatial), 1 to 3 spatial
    dims; scales: the op's optional scales, one per spatial dim; exact:
    "nearest-exact"."""
    x = contiguous(self)
    nsp = len(scales)
    total = out.numel()
    if total == 0:
        return

    o_t = dense_out(out)
    block = block_for(total)
    launch(
        _upsample_nearest_kernel,
        (cdiv(total, block),),
        x,
        o_t,
        total,
        *spatial3(x.shape, nsp),
        *spatial3(out.shape, nsp),
        *_nearest_scales(x.shape, out.shape, scales, exact),
        0.5 if exact else 0.0,
        BACKWARD=False,
        BLOCK=block,
    )
    write_back(out, o_t)


def upsample_nearest_backward(grad_output, grad_input, scales, exact=False):
    """The adjoint of upsample_nearest: float32 (float64) atomics, then grad_input."""

    g = contiguous(grad_output)
    nsp = len(scales)
    acc_t = float_acc(grad_input.dtype)
    acc = torch.empty(grad_input.shape, dtype=acc_t, device=grad_input.device)
    fill_(acc, 0)
    total = g.numel()
    if total:
        block = block_for(total)
        launch(
            _upsample_nearest_kernel,
            (cdiv(total, block),),
            g,
            acc,
            total,
            *spatial3(grad_input.shape, nsp),
            *spatial3(g.shape, nsp),
            *_nearest_scales(grad_input.shape, g.shape, scales, exact),
            0.5 if exact else 0.0,
            BACKWARD=True,
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


@kernel("upsample_nearest2d")
def upsample_nearest2d_out(
    self: torch.Tensor,
    output_size: list[int],
    scales_h: float | None,
    scales_w: float | None,
    out: torch.Tensor,
) -> None:
    upsample_nearest(self, out, (scales_h, scales_w))


@kernel("upsample_nearest2d_backward")
def upsample_nearest2d_backward_out(
    grad_output: torch.Tensor,
    output_size: list[int],
    input_size: list[int],
    scales_h: float | None,
    scales_w: float | None,
    grad_input: torch.Tensor,
) -> None:
    upsample_nearest_backward(grad_output, grad_input, (scales_h, scales_w))


# -- nearest / nearest-exact, 1-d to 3-d (structured impls) -------------------------
# The kernel of upsample_nearest2d (upsample_nearest, below), with
# "nearest-exact"'s half-pixel offset: src = min(floor((o + 0.5) * scale), I-1).
#   upsample_nearest{1,3}d.out impl: (self, output_size, *scales, out)
#   upsample_nearest{1,3}d_backward.grad_input impl:
#       (grad_output, output_size, input_size, *scales, grad_input)
#   _upsample_nearest_exact{1,2,3}d(.out / _backward.grad_input): the same arguments


def _nearest_fns(nsp, exact):
    def forward_out(
        self: torch.Tensor, output_size: list[int], *scales_and_out: float | None | torch.Tensor
    ) -> None:
        *scales, out = scales_and_out
        upsample_nearest(self, out, scales, exact=exact)

    def backward_out(
        grad_output: torch.Tensor,
        output_size: list[int],
        input_size: list[int],
        *scales_and_grad: float | None | torch.Tensor,
    ) -> None:
        *scales, grad_input = scales_and_grad
        upsample_nearest_backward(grad_output, grad_input, scales, exact=exact)

    return forward_out, backward_out


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
