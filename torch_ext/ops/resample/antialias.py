"""Antialiased bilinear and bicubic interpolation, 2-d (+ backward)."""

import math
import torch
import triton
import triton.language as tl

from .._common import tl_float_acc
from .._launch import launch
from .._common import dense_out, split3, store_masked, write_back
from ..copy import copy_kernel
from .._common import contiguous
from .._declare import kernel
from .._common import zeroed_accumulator, grid_for, alert_not_deterministic
from .linear import _linear_args

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
    plane, oh, ow = split3(e, OH, OW)
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
        store_masked(out, e, v, mask)


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
    def forward_out(
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
            _aa_kernel,
            grid,
            x,
            o_t,
            total,
            *_aa_args(x.shape, out.shape, align_corners, scales_h, scales_w, cubic),
            CUBIC=cubic,
            BACKWARD=False,
            ACC=tl_float_acc(x.dtype),
            BLOCK=block,
        )
        write_back(out, o_t)

    def backward_out(
        grad_output: torch.Tensor,
        output_size: list[int],
        input_size: list[int],
        align_corners: bool,
        scales_h: float | None,
        scales_w: float | None,
        grad_input: torch.Tensor,
    ) -> None:
        name = "bicubic" if cubic else "bilinear"
        alert_not_deterministic(f"_upsample_{name}2d_aa_backward_out_privateuseone")
        g = contiguous(grad_output)
        acc = zeroed_accumulator(grad_input)
        total = g.numel()
        if total:
            grid, block = grid_for(total)
            launch(
                _aa_kernel,
                grid,
                g,
                acc,
                total,
                *_aa_args(grad_input.shape, g.shape, align_corners, scales_h, scales_w, cubic),
                CUBIC=cubic,
                BACKWARD=True,
                ACC=tl_float_acc(acc.dtype),
                BLOCK=block,
            )
        copy_kernel((grad_input,), (acc,))

    return forward_out, backward_out


_bilinear_aa, _bilinear_aa_bwd = _aa_fns(False)
_bicubic_aa, _bicubic_aa_bwd = _aa_fns(True)
kernel("_upsample_bilinear2d_aa")(_bilinear_aa)
kernel("_upsample_bilinear2d_aa_backward")(_bilinear_aa_bwd)
kernel("_upsample_bicubic2d_aa")(_bicubic_aa)
kernel("_upsample_bicubic2d_aa_backward")(_bicubic_aa_bwd)
