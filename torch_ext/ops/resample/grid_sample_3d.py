"""grid_sampler_3d and its backward (F.grid_sample on 5-d inputs)."""

import torch
import triton
import triton.language as tl

from .._common import tl_float_acc
from .._launch import launch
from .._math import _rint
from .._common import split4, store_masked
from ..copy import copy_kernel
from ..resample.grid_sample_2d import _source
from .._common import contiguous
from .._declare import kernel
from .._common import zeroed_accumulator, grid_for, alert_not_deterministic

# -- grid sampling, 3-d (plain ops): F.grid_sample on 5-d inputs ----------------
#   grid_sampler_3d(input (N, C, D, H, W), grid (N, OD, OH, OW, 3), interpolation_mode,
#                   padding_mode, align_corners) -> out
#   grid_sampler_3d_backward(grad_output, input, grid, interpolation_mode, padding_mode,
#                            align_corners, output_mask) -> (grad_input?, grad_grid)
# interpolation 0 trilinear, 1 nearest (round half to even); padding 0 zeros,
# 1 border, 2 reflection (ATen/native/GridSampler.h); grid's last dim is
# (x, y, z) -> (W, H, D).  Coordinates in float32 (float64 for float64).  The
# forward runs one program per block of output elements; the backward one per
# block of grid points, looping over the channels: grad_grid sums them,
# grad_input takes float32 atomics.  Source coordinates (unnormalise, pad, and
# their derivative) are grid_sample.py's, shared with grid_sampler_2d.


def _check_grid_common(input, grid, interpolation_mode, padding_mode):
    nsp = input.dim() - 2
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got "
            f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != nsp:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nsp} in last dimension, but "
            f"got grid with sizes {list(grid.shape)}"
        )
    for d in range(2, input.dim()):
        if input.shape[d] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, "
                f"but input has sizes {list(input.shape)} with dimension {d} being empty"
            )
    if input.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have the input's dtype {input.dtype}, "
            f"but got {grid.dtype}"
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"grid_sampler(): expected a floating point input, got {input.dtype}")
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise RuntimeError(
            f"grid_sampler(): unknown interpolation mode {interpolation_mode} or "
            f"padding mode {padding_mode}"
        )


@triton.jit
def _corner(b: tl.constexpr, d):
    """Weight of the lower (b = 0) or upper (b = 1) tap at fraction d, and its slope."""
    if b == 1:
        return d, 1.0
    return 1 - d, -1.0


@triton.jit
def _grid_coords3(
    grid, p, D, H, W, PADDING: tl.constexpr, ALIGN: tl.constexpr, ACC: tl.constexpr, mask
):
    gx = tl.load(grid + 3 * p, mask=mask, other=0).to(ACC)
    gy = tl.load(grid + 3 * p + 1, mask=mask, other=0).to(ACC)
    gz = tl.load(grid + 3 * p + 2, mask=mask, other=0).to(ACC)
    ix, dx = _source(gx, W, PADDING, ALIGN)
    iy, dy = _source(gy, H, PADDING, ALIGN)
    iz, dz = _source(gz, D, PADDING, ALIGN)
    return ix, iy, iz, dx, dy, dz


@triton.jit
def _inb3(z, y, x, D, H, W):
    return (z >= 0) & (z < D) & (y >= 0) & (y < H) & (x >= 0) & (x < W)


@triton.jit
def _grid_sample3d_kernel(
    x,
    grid,
    out,
    total,
    C,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    MODE: tl.constexpr,
    PADDING: tl.constexpr,
    ALIGN: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    nc, od, oh, ow = split4(e, OD, OH, OW)
    n = nc // C
    p = ((n * OD + od) * OH + oh) * OW + ow
    ix, iy, iz, _, _, _ = _grid_coords3(grid, p, D, H, W, PADDING, ALIGN, ACC, mask)
    base = x + nc * D * H * W
    if MODE == 1:
        xn = _rint(ix).to(tl.int64)
        yn = _rint(iy).to(tl.int64)
        zn = _rint(iz).to(tl.int64)
        v = tl.load(
            base + (zn * H + yn) * W + xn, mask=mask & _inb3(zn, yn, xn, D, H, W), other=0
        ).to(ACC)
    else:
        fx = tl.floor(ix)
        fy = tl.floor(iy)
        fz = tl.floor(iz)
        x0 = fx.to(tl.int64)
        y0 = fy.to(tl.int64)
        z0 = fz.to(tl.int64)
        v = tl.zeros((BLOCK,), ACC)
        for k in tl.static_range(8):
            wx, _ = _corner(k & 1, ix - fx)
            wy, _ = _corner((k >> 1) & 1, iy - fy)
            wz, _ = _corner(k >> 2, iz - fz)
            xi = x0 + (k & 1)
            yi = y0 + ((k >> 1) & 1)
            zi = z0 + (k >> 2)
            ok = mask & _inb3(zi, yi, xi, D, H, W)
            v += tl.load(base + (zi * H + yi) * W + xi, mask=ok, other=0).to(ACC) * (wx * wy * wz)
    store_masked(out, e, v, mask)


@triton.jit
def _grid_sample3d_backward_kernel(
    g,
    x,
    grid,
    gin,
    ggrid,
    total,
    C,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    MODE: tl.constexpr,
    PADDING: tl.constexpr,
    ALIGN: tl.constexpr,
    INPUT_GRAD: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # grid points
    mask = p < total
    S = OD * OH * OW
    n = p // S
    s = p % S
    ix, iy, iz, mx, my, mz = _grid_coords3(grid, p, D, H, W, PADDING, ALIGN, ACC, mask)
    gix = tl.zeros((BLOCK,), ACC)
    giy = tl.zeros((BLOCK,), ACC)
    giz = tl.zeros((BLOCK,), ACC)
    if MODE == 1:
        xn = _rint(ix).to(tl.int64)
        yn = _rint(iy).to(tl.int64)
        zn = _rint(iz).to(tl.int64)
        ok = mask & _inb3(zn, yn, xn, D, H, W)
        if INPUT_GRAD:
            for c in range(0, C):
                go = tl.load(g + (n * C + c) * S + s, mask=mask, other=0).to(ACC)
                tl.atomic_add(gin + (n * C + c) * D * H * W + (zn * H + yn) * W + xn, go, mask=ok)
    else:
        fx = tl.floor(ix)
        fy = tl.floor(iy)
        fz = tl.floor(iz)
        x0 = fx.to(tl.int64)
        y0 = fy.to(tl.int64)
        z0 = fz.to(tl.int64)
        for c in range(0, C):
            plane = (n * C + c) * D * H * W
            go = tl.load(g + (n * C + c) * S + s, mask=mask, other=0).to(ACC)
            for k in tl.static_range(8):
                wx, sx = _corner(k & 1, ix - fx)
                wy, sy = _corner((k >> 1) & 1, iy - fy)
                wz, sz = _corner(k >> 2, iz - fz)
                xi = x0 + (k & 1)
                yi = y0 + ((k >> 1) & 1)
                zi = z0 + (k >> 2)
                ok = mask & _inb3(zi, yi, xi, D, H, W)
                a = plane + (zi * H + yi) * W + xi
                if INPUT_GRAD:
                    tl.atomic_add(gin + a, go * (wx * wy * wz), mask=ok)
                v = tl.load(x + a, mask=ok, other=0).to(ACC) * go
                gix += v * (sx * wy * wz)
                giy += v * (wx * sy * wz)
                giz += v * (wx * wy * sz)
    store_masked(ggrid, 3 * p, gix * mx, mask)
    store_masked(ggrid, 3 * p + 1, giy * my, mask)
    store_masked(ggrid, 3 * p + 2, giz * mz, mask)


def _check_grid_sampler3d(input, grid, interpolation_mode, padding_mode):
    if input.dim() != 5 or grid.dim() != 5:
        raise RuntimeError(
            "grid_sampler(): expected 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(input.shape)} and grid with sizes "
            f"{list(grid.shape)}"
        )
    if interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    _check_grid_common(input, grid, interpolation_mode, padding_mode)


@kernel()
def grid_sampler_3d(
    input: torch.Tensor,
    grid: torch.Tensor,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
) -> torch.Tensor:
    _check_grid_sampler3d(input, grid, interpolation_mode, padding_mode)
    x, gr = contiguous(input), contiguous(grid)
    N, C, D, H, W = x.shape
    OD, OH, OW = gr.shape[1:4]
    out = torch.empty((N, C, OD, OH, OW), dtype=x.dtype, device=x.device)
    total = out.numel()
    if total:
        grid_, block = grid_for(total)
        launch(
            _grid_sample3d_kernel,
            grid_,
            x,
            gr,
            out,
            total,
            C,
            D,
            H,
            W,
            OD,
            OH,
            OW,
            MODE=int(interpolation_mode),
            PADDING=int(padding_mode),
            ALIGN=bool(align_corners),
            ACC=tl_float_acc(x.dtype),
            BLOCK=block,
        )
    return out


@kernel()
def grid_sampler_3d_backward(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    grid: torch.Tensor,
    interpolation_mode: int,
    padding_mode: int,
    align_corners: bool,
    output_mask: list[bool],
) -> tuple[torch.Tensor | None, torch.Tensor]:
    _check_grid_sampler3d(input, grid, interpolation_mode, padding_mode)
    alert_not_deterministic("grid_sampler_3d_backward_privateuseone")
    x, gr, g = contiguous(input), contiguous(grid), contiguous(grad_output)
    N, C, D, H, W = x.shape
    OD, OH, OW = gr.shape[1:4]
    if list(g.shape) != [N, C, OD, OH, OW]:
        raise RuntimeError(
            f"grid_sampler_3d_backward(): grad_output of shape {list(g.shape)}, "
            f"expected {[N, C, OD, OH, OW]}"
        )
    want_input = bool(output_mask[0])
    acc = zeroed_accumulator(x) if want_input else None
    ggrid = torch.empty(gr.shape, dtype=gr.dtype, device=gr.device)
    total = N * OD * OH * OW
    if total:
        grid_, block = grid_for(total)
        launch(
            _grid_sample3d_backward_kernel,
            grid_,
            g,
            x,
            gr,
            acc if want_input else x,
            ggrid,
            total,
            C,
            D,
            H,
            W,
            OD,
            OH,
            OW,
            MODE=int(interpolation_mode),
            PADDING=int(padding_mode),
            ALIGN=bool(align_corners),
            INPUT_GRAD=want_input,
            ACC=tl_float_acc(x.dtype),
            BLOCK=block,
        )
    grad_input = None
    if want_input:
        grad_input = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        copy_kernel((grad_input,), (acc,))
    return grad_input, ggrid
