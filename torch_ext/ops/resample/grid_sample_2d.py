"""grid_sampler_2d and its backward (F.grid_sample on 4-d inputs): bilinear,
nearest and bicubic interpolation; zeros, border and reflection padding;
align_corners either way -- PyTorch's definitions (GridSampler.h).

One lane per output location (n, h, w), looping over the channels, so the
grid point, its source coordinates and weights are computed once per location;
the input gradient accumulates with float32 (float64) atomics, the grid
gradient is a plain sum over the channels in the lane.
"""

import torch
import triton
import triton.language as tl

from .. import _math
from .._launch import cdiv, launch, next_pow2
from ..copy import copy_kernel
from .._common import alert_not_deterministic, float_acc, tl_float_acc
from .._declare import kernel

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2


@triton.jit
def _reflect(x, twice_low, twice_high):
    """x reflected into [twice_low / 2, twice_high / 2]; and d(result)/dx (+-1)."""
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    d = x - lo
    sign = tl.where(d < 0, -1.0, 1.0)
    d = tl.abs(d)
    flips = tl.floor(d / span)
    extra = d - flips * span
    even = (flips % 2.0) == 0
    r = tl.where(even, extra + lo, span - extra + lo)
    g = tl.where(even, sign, -sign)
    return tl.where(span <= 0, 0.0 * x, r), tl.where(span <= 0, 0.0 * x, g)


@triton.jit
def _source(coord, size, PADDING: tl.constexpr, ALIGN: tl.constexpr):
    """Unnormalised source coordinate of grid value `coord` in [-1, 1], padded;
    and its derivative with respect to coord."""
    if ALIGN:
        x = (coord + 1.0) / 2.0 * (size - 1)
        g = (size - 1) / 2.0 + 0.0 * coord
    else:
        x = ((coord + 1.0) * size - 1.0) / 2.0
        g = size / 2.0 + 0.0 * coord
    if PADDING == 1:  # border: clip
        inside = (x > 0) & (x < size - 1)
        x = tl.minimum(tl.maximum(x, 0.0), size - 1.0)
        g = tl.where(inside, g, 0.0)
    elif PADDING == 2:  # reflection, then clip
        if ALIGN:
            x, gr = _reflect(x, 0.0, 2.0 * (size - 1))
        else:
            x, gr = _reflect(x, -1.0, 2.0 * size - 1.0)
        g = g * gr
        inside = (x > 0) & (x < size - 1)
        x = tl.minimum(tl.maximum(x, 0.0), size - 1.0)
        g = tl.where(inside, g, 0.0)
    return x, g


@triton.jit
def _cubic_weights(t):
    # Keys' cubic convolution with A = -0.75 (PyTorch's), taps at -1, 0, 1, 2.
    A = -0.75
    x0 = t + 1.0
    x1 = t
    x2 = 1.0 - t
    x3 = 2.0 - t
    w0 = ((A * x0 - 5.0 * A) * x0 + 8.0 * A) * x0 - 4.0 * A
    w1 = ((A + 2.0) * x1 - (A + 3.0)) * x1 * x1 + 1.0
    w2 = ((A + 2.0) * x2 - (A + 3.0)) * x2 * x2 + 1.0
    w3 = ((A * x3 - 5.0 * A) * x3 + 8.0 * A) * x3 - 4.0 * A
    return w0, w1, w2, w3


@triton.jit
def _cubic_dweights(t):
    A = -0.75
    x0 = t + 1.0
    x1 = t
    x2 = 1.0 - t
    x3 = 2.0 - t
    d0 = (3.0 * A * x0 - 10.0 * A) * x0 + 8.0 * A
    d1 = (3.0 * (A + 2.0) * x1 - 2.0 * (A + 3.0)) * x1
    d2 = -((3.0 * (A + 2.0) * x2 - 2.0 * (A + 3.0)) * x2)
    d3 = -((3.0 * A * x3 - 10.0 * A) * x3 + 8.0 * A)
    return d0, d1, d2, d3


@triton.jit
def _tap_index(i, size, PADDING: tl.constexpr, ALIGN: tl.constexpr):
    """Bicubic taps: an integer coordinate through the padding; (index, valid)."""
    x = i.to(tl.float32)
    if PADDING == 1:
        x = tl.minimum(tl.maximum(x, 0.0), size - 1.0)
    elif PADDING == 2:
        if ALIGN:
            x, _g = _reflect(x, 0.0, 2.0 * (size - 1))
        else:
            x, _g = _reflect(x, -1.0, 2.0 * size - 1.0)
        x = tl.minimum(tl.maximum(x, 0.0), size - 1.0)
    j = x.to(tl.int64)
    return j, (x >= 0) & (x <= size - 1)


@triton.jit
def _grid_sample_kernel(
    inp,
    grid,
    out,
    gout,
    ginp,
    ggrid,
    total,
    C,
    H,
    W,
    OH,
    OW,
    s_n,
    s_c,
    s_h,
    s_w,
    g_n,
    g_h,
    g_w,
    g_k,
    MODE: tl.constexpr,
    PADDING: tl.constexpr,
    ALIGN: tl.constexpr,
    BACKWARD: tl.constexpr,
    INPUT_GRAD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Lanes: output locations (n, oh, ow).  Forward: out (N, C, OH, OW) contiguous.
    # Backward: gout (N, C, OH, OW) contiguous; ginp (N, C, H, W) contiguous ACC
    # (atomics); ggrid (N, OH, OW, 2) contiguous ACC.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    ow = e % OW
    oh = (e // OW) % OH
    n = e // (OW * OH)
    gbase = grid + n * g_n + oh * g_h + ow * g_w
    gx = tl.load(gbase, mask=mask, other=0).to(ACC)
    gy = tl.load(gbase + g_k, mask=mask, other=0).to(ACC)
    x, dx = _source(gx, W, PADDING, ALIGN)
    y, dy = _source(gy, H, PADDING, ALIGN)
    base = inp + n * s_n
    obase = n * C * OH * OW + oh * OW + ow
    gix = tl.zeros((BLOCK,), ACC)
    giy = tl.zeros((BLOCK,), ACC)
    if MODE == 0:
        x0f = tl.floor(x)
        y0f = tl.floor(y)
        x0 = x0f.to(tl.int64)
        y0 = y0f.to(tl.int64)
        x1 = x0 + 1
        y1 = y0 + 1
        tx = x - x0f
        ty = y - y0f
        w00 = (1 - tx) * (1 - ty)
        w01 = tx * (1 - ty)
        w10 = (1 - tx) * ty
        w11 = tx * ty
        m00 = mask & (x0 >= 0) & (x0 < W) & (y0 >= 0) & (y0 < H)
        m01 = mask & (x1 >= 0) & (x1 < W) & (y0 >= 0) & (y0 < H)
        m10 = mask & (x0 >= 0) & (x0 < W) & (y1 >= 0) & (y1 < H)
        m11 = mask & (x1 >= 0) & (x1 < W) & (y1 >= 0) & (y1 < H)
        o00 = y0 * s_h + x0 * s_w
        o01 = y0 * s_h + x1 * s_w
        o10 = y1 * s_h + x0 * s_w
        o11 = y1 * s_h + x1 * s_w
        for c in range(C):
            p = base + c * s_c
            if BACKWARD:
                g = tl.load(gout + obase + c * OH * OW, mask=mask, other=0).to(ACC)
                if INPUT_GRAD:
                    q = ginp + (n * C + c) * H * W
                    tl.atomic_add(q + y0 * W + x0, w00 * g, mask=m00)
                    tl.atomic_add(q + y0 * W + x1, w01 * g, mask=m01)
                    tl.atomic_add(q + y1 * W + x0, w10 * g, mask=m10)
                    tl.atomic_add(q + y1 * W + x1, w11 * g, mask=m11)
                v00 = tl.load(p + o00, mask=m00, other=0).to(ACC)
                v01 = tl.load(p + o01, mask=m01, other=0).to(ACC)
                v10 = tl.load(p + o10, mask=m10, other=0).to(ACC)
                v11 = tl.load(p + o11, mask=m11, other=0).to(ACC)
                gix += g * ((v01 - v00) * (1 - ty) + (v11 - v10) * ty)
                giy += g * ((v10 - v00) * (1 - tx) + (v11 - v01) * tx)
            else:
                v = tl.load(p + o00, mask=m00, other=0).to(ACC) * w00
                v += tl.load(p + o01, mask=m01, other=0).to(ACC) * w01
                v += tl.load(p + o10, mask=m10, other=0).to(ACC) * w10
                v += tl.load(p + o11, mask=m11, other=0).to(ACC) * w11
                tl.store(out + obase + c * OH * OW, v.to(out.dtype.element_ty), mask=mask)
    elif MODE == 1:
        xn = _math.rint(x).to(tl.int64)
        yn = _math.rint(y).to(tl.int64)
        m = mask & (xn >= 0) & (xn < W) & (yn >= 0) & (yn < H)
        for c in range(C):
            if BACKWARD:
                if INPUT_GRAD:
                    g = tl.load(gout + obase + c * OH * OW, mask=mask, other=0).to(ACC)
                    tl.atomic_add(ginp + (n * C + c) * H * W + yn * W + xn, g, mask=m)
            else:
                v = tl.load(base + c * s_c + yn * s_h + xn * s_w, mask=m, other=0)
                tl.store(out + obase + c * OH * OW, v.to(out.dtype.element_ty), mask=mask)
    else:
        # Bicubic: PyTorch takes the unpadded coordinate and pads each tap.
        if ALIGN:
            xu = (gx + 1.0) / 2.0 * (W - 1)
            yu = (gy + 1.0) / 2.0 * (H - 1)
            dx = (W - 1) / 2.0 + 0.0 * gx
            dy = (H - 1) / 2.0 + 0.0 * gy
        else:
            xu = ((gx + 1.0) * W - 1.0) / 2.0
            yu = ((gy + 1.0) * H - 1.0) / 2.0
            dx = W / 2.0 + 0.0 * gx
            dy = H / 2.0 + 0.0 * gy
        xf = tl.floor(xu)
        yf = tl.floor(yu)
        tx = xu - xf
        ty = yu - yf
        wx0, wx1, wx2, wx3 = _cubic_weights(tx)
        wy0, wy1, wy2, wy3 = _cubic_weights(ty)
        dx0, dx1, dx2, dx3 = _cubic_dweights(tx)
        dy0, dy1, dy2, dy3 = _cubic_dweights(ty)
        xi = xf.to(tl.int64)
        yi = yf.to(tl.int64)
        for c in range(C):
            p = base + c * s_c
            if BACKWARD:
                g = tl.load(gout + obase + c * OH * OW, mask=mask, other=0).to(ACC)
            acc = tl.zeros((BLOCK,), ACC)
            for j in tl.static_range(4):
                if j == 0:
                    wy, dwy = wy0, dy0
                elif j == 1:
                    wy, dwy = wy1, dy1
                elif j == 2:
                    wy, dwy = wy2, dy2
                else:
                    wy, dwy = wy3, dy3
                yj, yok = _tap_index(yi - 1 + j, H, PADDING, ALIGN)
                for i in tl.static_range(4):
                    if i == 0:
                        wx, dwx = wx0, dx0
                    elif i == 1:
                        wx, dwx = wx1, dx1
                    elif i == 2:
                        wx, dwx = wx2, dx2
                    else:
                        wx, dwx = wx3, dx3
                    xj, xok = _tap_index(xi - 1 + i, W, PADDING, ALIGN)
                    ok = mask & xok & yok
                    v = tl.load(p + yj * s_h + xj * s_w, mask=ok, other=0).to(ACC)
                    if BACKWARD:
                        if INPUT_GRAD:
                            tl.atomic_add(
                                ginp + (n * C + c) * H * W + yj * W + xj, wx * wy * g, mask=ok
                            )
                        gix += g * v * dwx * wy
                        giy += g * v * wx * dwy
                    else:
                        acc += v * wx * wy
            if not BACKWARD:
                tl.store(out + obase + c * OH * OW, acc.to(out.dtype.element_ty), mask=mask)
    if BACKWARD:
        gg = ggrid + e * 2
        tl.store(gg, gix * dx, mask=mask)
        tl.store(gg + 1, giy * dy, mask=mask)


def _check(input, grid, mode, padding):
    if (
        input.dim() != 4
        or grid.dim() != 4
        or grid.shape[-1] != 2
        or grid.shape[0] != input.shape[0]
    ):
        raise RuntimeError(
            f"grid_sampler(): expected 4D input and grid with same batch size and "
            f"grid of shape (N, H, W, 2), but got input {list(input.shape)} and "
            f"grid {list(grid.shape)}"
        )
    if input.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have same dtype, but input "
            f"has {input.dtype} and grid has {grid.dtype}"
        )
    if mode not in (BILINEAR, NEAREST, BICUBIC) or padding not in (ZEROS, BORDER, REFLECTION):
        raise RuntimeError(
            f"grid_sampler(): unknown interpolation mode {mode} or padding mode {padding}"
        )


def _acc(dtype):
    return float_acc(dtype), tl_float_acc(dtype)


def _launch(inp, grid, out, gout, ginp, ggrid, mode, padding, align, backward, input_grad):
    N, C, H, W = inp.shape
    OH, OW = grid.shape[1], grid.shape[2]
    total = N * OH * OW
    if total == 0:
        return
    block = min(256, next_pow2(total))
    launch(
        _grid_sample_kernel,
        (cdiv(total, block),),
        inp,
        grid,
        out,
        gout,
        ginp,
        ggrid,
        total,
        C,
        H,
        W,
        OH,
        OW,
        *inp.stride(),
        *grid.stride(),
        MODE=mode,
        PADDING=padding,
        ALIGN=bool(align),
        BACKWARD=backward,
        INPUT_GRAD=input_grad,
        ACC=_acc(inp.dtype)[1],
        BLOCK=block,
    )


@kernel()
def grid_sampler_2d(
    input: torch.Tensor,
    grid: torch.Tensor,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
) -> torch.Tensor:
    _check(input, grid, interpolation_mode, padding_mode)
    N, C = input.shape[:2]
    out = torch.empty(N, C, grid.shape[1], grid.shape[2], dtype=input.dtype, device=input.device)
    _launch(
        input,
        grid,
        out,
        out,
        out,
        out,
        interpolation_mode,
        padding_mode,
        align_corners,
        False,
        False,
    )
    return out


@kernel()
def grid_sampler_2d_backward(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    grid: torch.Tensor,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
    output_mask: list[bool],
) -> tuple[torch.Tensor, torch.Tensor]:
    """-> (grad_input, grad_grid); output_mask says which are wanted."""
    alert_not_deterministic("grid_sampler_2d_backward_privateuseone")
    _check(input, grid, interpolation_mode, padding_mode)
    acc, _ = _acc(input.dtype)
    g = grad_output.contiguous()
    ginp = torch.zeros(input.shape, dtype=acc, device=input.device)
    ggrid = torch.empty(grid.shape, dtype=acc, device=grid.device)
    _launch(
        input,
        grid,
        g,
        g,
        ginp,
        ggrid,
        interpolation_mode,
        padding_mode,
        align_corners,
        True,
        bool(output_mask[0]),
    )
    grad_input = torch.empty(0, dtype=input.dtype, device=input.device)
    if output_mask[0]:
        grad_input = torch.empty(input.shape, dtype=input.dtype, device=input.device)
        copy_kernel((grad_input,), (ginp,))
    grad_grid = torch.empty(grid.shape, dtype=grid.dtype, device=grid.device)
    copy_kernel((grad_grid,), (ggrid,))
    return grad_input, grad_grid
