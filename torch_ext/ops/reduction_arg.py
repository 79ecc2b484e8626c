"""max/min(dim) and argmax/argmin: the reductions that carry an index, over a tensor
viewed as (A, R, B) as in reduction.py; one launch, one read of the input. Structured
impl convention (2): fn(*impl_args, *outs)."""

import torch
import triton
import triton.language as tl

from ..backends import spec
from ._common import TL_DTYPES, as_arb, reduce_blocks
from ._declare import kernel
from ._launch import cdiv, launch
from ._rows import reduction_tile, row_tile, warps_for
from .copy import copy_kernel
from .reduction import MAX, MIN, _minmax_acc, _neutral, nan_extreme, normalize_dims


@triton.jit
def _arg_kernel(
    x,
    vals,
    idxs,
    O,
    R,
    B,
    neutral,
    IS_MAX: tl.constexpr,
    VALUES: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
    NAN_COMBINE: tl.constexpr = False,
):
    # One read of x. Each tile's winner per lane in PyTorch's order (NaN above every
    # number): its extreme value by one reduction (NAN_COMBINE: a combine that lets NaN
    # win, max.NaN on a GPU; the interpreter runs a custom combine one element at a time,
    # so there tl.max/min and a NaN flag), then the first index holding it (a NaN
    # matches a NaN) by a second, over int32 positions: a reduction carrying (value,
    # index) pairs cost the GPU several times the loads (argmax at 37-53% of copy
    # bandwidth). A later tile (higher indices) replaces the running pair only when
    # strictly better; padding holds `neutral` at indices above every element.
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = o < O
    base = (o // B) * R * B + o % B
    best = tl.full((BLOCK_O,), neutral, ACC)
    best_i = tl.zeros((BLOCK_O,), tl.int64)
    pos = tl.arange(0, BLOCK_R)[:, None]
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        m = (r < R)[:, None] & omask[None, :]
        v = tl.load(x + (r[:, None] * B + base[None, :]), mask=m, other=neutral).to(ACC)
        tv = nan_extreme(v, IS_MAX, NAN_COMBINE)
        hit = v == tv[None, :]
        if ACC.is_floating():
            hit = hit | ((v != v) & (tv != tv)[None, :])
        ti = tl.min(tl.where(hit, pos, BLOCK_R), 0)
        take = tv > best if IS_MAX else tv < best
        if ACC.is_floating():
            take = (best == best) & (take | (tv != tv))
        best = tl.where(take, tv, best)
        best_i = tl.where(take, r0 + ti.to(tl.int64), best_i)
    if VALUES:
        if vals.dtype.element_ty == tl.bfloat16:
            best = best.to(tl.float32)  # the interpreter casts int64/float64 bitwise
        tl.store(vals + o, best.to(vals.dtype.element_ty), mask=omask)
    tl.store(idxs + o, best_i, mask=omask)


@triton.jit
def _packed_winner(v, m, pos, IS_MAX: tl.constexpr, KEY: tl.constexpr, FLOAT: tl.constexpr):
    """Each lane's winner (the extreme, NaN above every number, the first index among
    ties) of tile v as one packed integer per lane: (order key << KEY) | (~position), a
    KEY-bit key whose signed order is PyTorch's order of the values (argmin: reversed;
    NaN first either way; -0 equal to +0). One max reduction finds it, as cheap as
    amax's (the value-then-index search took two cross-thread reductions: argmax at 46%
    of copy bandwidth against amax's 94%, H200). Masked elements never win."""
    if KEY == 16:
        WIDE: tl.constexpr = tl.int32
    else:
        WIDE: tl.constexpr = tl.int64
    if FLOAT:
        if KEY == 16:
            bits = v.to(tl.int16, bitcast=True).to(WIDE)
        else:
            bits = v.to(tl.int32, bitcast=True).to(WIDE)
        vf = v.to(tl.float32)  # (the interpreter compares bfloat16 as raw bits)
        bits = tl.where(vf == 0, 0, bits)
        # negative floats: flip the magnitude bits so that larger means larger
        key = bits ^ ((bits >> (2 * KEY - 1)) & ((1 << (KEY - 1)) - 1))
    else:
        key = v.to(WIDE)
    if not IS_MAX:
        key = -1 - key
    if FLOAT:
        key = tl.where(vf != vf, (1 << (KEY - 1)) - 1, key)
    low = tl.full((), (1 << KEY) - 1, WIDE)
    packed = (key << KEY) | (low - pos.to(WIDE))
    lowest = tl.full((), -(1 << (2 * KEY - 1)), WIDE)
    return tl.max(tl.where(m, packed, lowest), 0)


@triton.jit
def _arg_packed_kernel(
    x,
    vals,
    idxs,
    O,
    R,
    B,
    IS_MAX: tl.constexpr,
    VALUES: tl.constexpr,
    KEY: tl.constexpr,
    FLOAT: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    # One read of x; each tile's winners by one reduction of packed keys (_packed_winner);
    # a later tile (higher indices) replaces the running winner only when its key is
    # strictly larger. Values (max/min.dim) are the input at the winning index.
    if KEY == 16:
        WIDE: tl.constexpr = tl.int32
    else:
        WIDE: tl.constexpr = tl.int64
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = o < O
    base = (o // B) * R * B + o % B
    low = tl.full((), (1 << KEY) - 1, WIDE)
    best = tl.full((BLOCK_O,), -(1 << (2 * KEY - 1)), WIDE)
    best_i = tl.zeros((BLOCK_O,), tl.int64)
    pos = tl.arange(0, BLOCK_R)[:, None]
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        m = (r < R)[:, None] & omask[None, :]
        v = tl.load(x + (r[:, None] * B + base[None, :]), mask=m)
        win = _packed_winner(v, m, pos, IS_MAX, KEY, FLOAT)
        key = win >> KEY
        take = key > best
        best = tl.where(take, key, best)
        best_i = tl.where(take, r0 + (low - (win & low)).to(tl.int64), best_i)
    if VALUES:
        tl.store(vals + o, tl.load(x + base + best_i * B, mask=omask), mask=omask)
    tl.store(idxs + o, best_i, mask=omask)


# dtype -> (key bits, floating): the dtypes whose order key and a position fit 32 bits
# (16-bit keys) or 64 (32-bit keys); the others (int64, float64, ...) take _arg_kernel.
_PACKED = {
    torch.float16: (16, True),
    torch.bfloat16: (16, True),
    torch.float32: (32, True),
    torch.bool: (16, False),
    torch.uint8: (16, False),
    torch.int8: (16, False),
    torch.int16: (16, False),
    torch.int32: (32, False),
}


def _arg_reduce(self, dim, values, indices, is_max):
    """max/min (values and indices) or, with values None, argmax/argmin: one launch,
    one read of the input."""
    x = self
    if dim is None:
        x, dims = self.reshape(-1) if self.is_contiguous() else self.flatten(), [0]
        if x.dim() == 0:
            x = x.reshape(1)
    else:
        dims = normalize_dims(dim, x.dim())
    xv, A, R, B = as_arb(x, dims)
    O = A * B
    if O == 0:
        return
    vt = values
    if values is not None and not values.is_contiguous():
        vt = torch.empty(values.shape, dtype=values.dtype, device=values.device)
    it = (
        indices
        if indices.is_contiguous()
        else torch.empty(indices.shape, dtype=torch.int64, device=indices.device)
    )
    packed = _PACKED.get(x.dtype)
    if packed is not None:  # tiles hold at most 64Ki positions: the position fits
        key, floating = packed
        # a packed key of 32 bits (16-bit keys) or 64 (two registers: two arrays)
        tile = row_tile(O, R, B, arrays=key // 16)
        if tile is not None and B == 1:
            tile = reduction_tile(O, R, x.element_size(), arrays=key // 16)
        if tile is not None:
            bo, br, warps = tile
        else:
            bo, br = reduce_blocks(O, R, B)
            warps = warps_for(bo * br * key // 16)
        launch(
            _arg_packed_kernel,
            (cdiv(O, bo),),
            xv,
            vt if vt is not None else it,
            it,
            O,
            R,
            B,
            IS_MAX=is_max,
            VALUES=vt is not None,
            KEY=key,
            FLOAT=floating,
            BLOCK_O=bo,
            BLOCK_R=br,
            num_warps=warps,
        )
    else:
        _launch_unpacked(xv, vt, it, O, R, B, x.dtype, is_max)
    if vt is not values:
        copy_kernel((values,), (vt.view(values.shape),))
    if it is not indices:
        copy_kernel((indices,), (it.view(indices.shape),))


def _launch_unpacked(xv, vt, it, O, R, B, dtype, is_max):
    """_arg_kernel: the value, then the first index holding it (int64, float64)."""
    acc = _minmax_acc(dtype)
    # The reduction with indices carries an index beside each value: two arrays.
    tile = row_tile(O, R, B, arrays=2)
    if tile is not None:
        bo, br, warps = tile
    else:
        bo, br = reduce_blocks(O, R, B)
        warps = warps_for(bo * br)
    launch(
        _arg_kernel,
        (cdiv(O, bo),),
        xv,
        vt if vt is not None else it,
        it,
        O,
        R,
        B,
        _neutral(MAX if is_max else MIN, dtype),
        IS_MAX=is_max,
        VALUES=vt is not None,
        ACC=TL_DTYPES[acc],
        BLOCK_O=bo,
        BLOCK_R=br,
        NAN_COMBINE=bool(spec("reduction_nan_combine")),
        num_warps=warps,
    )


@kernel("max_dim")
def max_dim_out(
    self: torch.Tensor, dim: int, keepdim: bool, max: torch.Tensor, max_values: torch.Tensor
) -> None:
    """max.dim_max impl: (self, dim, keepdim, max, max_values) -- values, indices."""
    _arg_reduce(self, dim, max, max_values, True)


@kernel("min_dim")
def min_dim_out(
    self: torch.Tensor, dim: int, keepdim: bool, min: torch.Tensor, min_indices: torch.Tensor
) -> None:
    _arg_reduce(self, dim, min, min_indices, False)


@kernel("argmax")
def argmax_out(self: torch.Tensor, dim: int | None, keepdim: bool, out: torch.Tensor) -> None:
    """argmax.out impl: (self, dim?, keepdim, out)."""
    _arg_reduce(self, dim, None, out, True)


@kernel("argmin")
def argmin_out(self: torch.Tensor, dim: int | None, keepdim: bool, out: torch.Tensor) -> None:
    _arg_reduce(self, dim, None, out, False)
