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
from ._rows import row_tile, warps_for
from .copy import copy_kernel
from .reduction import MAX, MIN, _max_nan, _min_nan, _minmax_acc, _neutral, nan_extreme
from .reduction import normalize_dims


@triton.jit
def _program_lanes(O, R, B, BLOCK_O: tl.constexpr):
    """This program's lanes o of the (A, R, B) view, their mask and first elements."""
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    return o, o < O, (o // B) * R * B + o % B


@triton.jit
def _load_step(x, r0, R, B, base, omask, neutral, ACC: tl.constexpr, BLOCK_R: tl.constexpr):
    """Elements r0 .. r0 + BLOCK_R of the lanes as a (BLOCK_R, BLOCK_O) tile in ACC,
    `neutral` past R and past the lanes."""
    r = r0 + tl.arange(0, BLOCK_R)
    m = (r < R)[:, None] & omask[None, :]
    return tl.load(x + (r[:, None] * B + base[None, :]), mask=m, other=neutral).to(ACC)


@triton.jit
def _store_winner(x, vals, idxs, o, omask, base, best_i, B, VALUES: tl.constexpr):
    """The winning index of each lane, and with VALUES the element there, bit for bit
    (-0, NaN payloads), as PyTorch."""
    if VALUES:
        tl.store(vals + o, tl.load(x + base + best_i * B, mask=omask), mask=omask)
    tl.store(idxs + o, best_i, mask=omask)


@triton.jit
def _wins(v, m, IS_FLOAT: tl.constexpr):
    """Whether v is the extreme m (a NaN when m is NaN)."""
    if IS_FLOAT:
        return tl.where(m != m, v != v, v == m)
    return v == m


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
    # matches a NaN) by a second, over the positions: a reduction carrying (value,
    # index) pairs cost the GPU several times the loads (argmax at 37-53% of copy
    # bandwidth). A later tile (higher indices) replaces the running pair only when
    # strictly better; padding holds `neutral` at indices above every element.
    o, omask, base = _program_lanes(O, R, B, BLOCK_O)
    best = tl.full((BLOCK_O,), neutral, ACC)
    best_i = tl.zeros((BLOCK_O,), tl.int64)
    pos = tl.arange(0, BLOCK_R).to(tl.float32)[:, None]
    for r0 in range(0, R, BLOCK_R):
        v = _load_step(x, r0, R, B, base, omask, neutral, ACC, BLOCK_R)
        tv = nan_extreme(v, IS_MAX, NAN_COMBINE)
        hit = v == tv[None, :]
        if ACC.is_floating():
            hit = hit | (v != v)  # a NaN anywhere is the extreme (tv NaN)
        # the first position by a float32 minimum (exact below 2**24; full rate, where
        # an integer minimum runs at half)
        ti = tl.min(tl.where(hit, pos, 3.0e38), 0).to(tl.int32)
        take = tv > best if IS_MAX else tv < best
        if ACC.is_floating():
            take = (best == best) & (take | (tv != tv))
        best = tl.where(take, tv, best)
        best_i = tl.where(take, r0 + ti.to(tl.int64), best_i)
    _store_winner(x, vals, idxs, o, omask, base, best_i, B, VALUES)


@triton.jit
def _arg_lanes_kernel(
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
    # _arg_kernel's result, with no reduction inside the loop over tiles: each element
    # of the tile (a lane of the row) keeps its own running winner and the tile it came
    # from, replaced only by a strictly better value (or a first NaN), so each lane
    # holds its earliest extreme; one reduction of values and one of positions at the
    # end. A tile a step, few registers: loads stay in flight across the steps.
    o, omask, base = _program_lanes(O, R, B, BLOCK_O)
    best = tl.full((BLOCK_R, BLOCK_O), neutral, ACC)
    best_r0 = tl.zeros((BLOCK_R, BLOCK_O), tl.int32)
    for r0 in range(0, R, BLOCK_R):
        v = _load_step(x, r0, R, B, base, omask, neutral, ACC, BLOCK_R)
        if ACC == tl.float16 and NAN_COMBINE:
            # the new extreme by one NaN-propagating max/min (two fp16 values an
            # instruction on a GPU); a lane took where it changed. A lane holding a NaN
            # takes every step (NaN != NaN): rows with a NaN find their first NaN
            # afterwards (_first_nan), so the loop has one compare and one select an
            # element: 8192 x 8192 fp16 46.2 -> 43.0 us (44.3 with a NaN guard in the
            # loop). float32 (bf16's compares) kept the compares and select: this form
            # with the guard was slower there, 46.3 -> 49.4 (H200,
            # tests_gpu/harness/argmax_rescan.py, session 33).
            new = _max_nan(best, v) if IS_MAX else _min_nan(best, v)
            take = new != best
            best = new
        else:
            take = v > best if IS_MAX else v < best
            if ACC.is_floating():
                take = take | ((v != v) & (best == best))
            best = tl.where(take, v, best)
        best_r0 = tl.where(take, r0, best_r0)
    tv = nan_extreme(best, IS_MAX, NAN_COMBINE)
    hit = _wins(best, tv[None, :], ACC.is_floating())
    # a lane that never took keeps tile 0: its element there equals the neutral value,
    # a real element (or, past R in a single short tile, never below a real hit)
    pos = best_r0 + tl.arange(0, BLOCK_R)[:, None]
    best_i = tl.min(tl.where(hit, pos, 2147483647), 0).to(tl.int64)
    if ACC == tl.float16 and NAN_COMBINE:
        best_i = _first_nan(x, R, B, base, omask, tv, best_i, BLOCK_R)
    _store_winner(x, vals, idxs, o, omask, base, best_i, B, VALUES)


@triton.jit
def _first_nan(x, R, B, base, omask, tv, best_i, BLOCK_R: tl.constexpr):
    """best_i with the lanes whose extreme tv is NaN set to their first NaN's index: a
    second read of this program's rows, only where one of them holds a NaN."""
    nan_row = tv != tv
    if tl.max(nan_row.to(tl.int32), 0) > 0:
        first = tl.full((BLOCK_R, tv.shape[0]), 2147483647, tl.int32)
        for r0 in range(0, R, BLOCK_R):
            v = _load_step(x, r0, R, B, base, omask & nan_row, 0.0, tl.float16, BLOCK_R)
            pos = r0 + tl.arange(0, BLOCK_R)[:, None]
            first = tl.minimum(first, tl.where(v != v, pos, 2147483647))
        best_i = tl.where(nan_row, tl.min(first, 0).to(tl.int64), best_i)
    return best_i


@triton.jit
def _arg_rescan_kernel(
    x,
    vals,
    idxs,
    R,
    neutral,
    IS_MAX: tl.constexpr,
    VALUES: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_R: tl.constexpr,
    NAN_COMBINE: tl.constexpr = False,
):
    # A contiguous row a program, read once as amax reads it: each lane of a step keeps
    # its running extreme (NaN wins; one packed max.NaN per two 16-bit values on a GPU,
    # no index), then the row's extreme. Only the lanes holding it are read again (from
    # L2) to find its first index: where one lane does (no ties), its elements one at a
    # time from the start until the extreme; ties or NaNs in several lanes, a masked
    # walk of the row that loads only those lanes. Without an index beside each value
    # (_arg_lanes_kernel) its steps can be wide, what few rows need to keep enough
    # loads in flight; with many rows and ties the walk costs more than it saves.
    row = tl.program_id(0).to(tl.int64)
    base = x + row * R
    lane = tl.arange(0, BLOCK_R)
    best = tl.full((BLOCK_R,), neutral, ACC)
    for r0 in range(0, R, BLOCK_R):
        v = tl.load(base + r0 + lane, mask=r0 + lane < R, other=neutral).to(ACC)
        best = _max_nan(best, v) if IS_MAX else _min_nan(best, v)  # as amax's step
    m = nan_extreme(best, IS_MAX, NAN_COMBINE)
    need = _wins(best, m, ACC.is_floating())
    # how many lanes hold the extreme (high bits) and, if one, which (low bits)
    s = tl.sum(tl.where(need, 65536 + lane, 0), 0)
    if s < 2 * 65536:
        r = s - 65536
        while _wins(tl.load(base + r).to(ACC), m, ACC.is_floating()) == 0:
            r += BLOCK_R
        idx = r
    else:
        first = tl.full((BLOCK_R,), 2147483647, tl.int32)
        for r0 in range(0, R, BLOCK_R):
            ok = need & (r0 + lane < R)
            v = tl.load(base + r0 + lane, mask=ok, other=neutral).to(ACC)
            hit = ok & _wins(v, m, ACC.is_floating())
            first = tl.minimum(first, tl.where(hit, r0 + lane, first))
        idx = tl.min(first, 0)
    if VALUES:
        tl.store(vals + row, tl.load(base + idx))
    tl.store(idxs + row, idx.to(tl.int64))


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
    nan_combine = bool(spec("reduction_nan_combine"))
    # fp16 compares in its own dtype on the GPU (half the registers and conversions:
    # argmax of 8192x8192 at 66% of copy bandwidth against 45%, H200); Triton's
    # NaN-propagating maximum of bf16 gives float32, and the interpreter compares
    # 16-bit floats as float32
    acc = x.dtype if nan_combine and x.dtype == torch.float16 else _minmax_acc(x.dtype)
    neutral = _neutral(MAX if is_max else MIN, x.dtype)
    vals = vt if vt is not None else it  # argmax/argmin: no values (VALUES=False)
    # Few long contiguous rows (the driver's `arg_rescan_tile`: (step, warps)), such as
    # greedy decoding's argmax over a vocabulary: wide steps of the row's extreme alone,
    # its first index found again (_arg_rescan_kernel).
    rescan = spec("arg_rescan_tile", O, R, x.element_size()) if B == 1 else None
    if rescan is not None and R < 2**31 - rescan[0]:
        step, warps = rescan
        assert step <= 16384  # the kernel's count of winning lanes fits int32
        launch(_arg_rescan_kernel, (O,), xv, vals, it, R, neutral,
               IS_MAX=is_max, VALUES=vt is not None, ACC=TL_DTYPES[acc], BLOCK_R=step,
               NAN_COMBINE=nan_combine, num_warps=warps)  # fmt: skip
        return _copy_back(values, vt, indices, it)
    # The reduction with indices carries an index beside each value: two arrays.
    # Rows in one tile: the one-tile kernel. Longer rows (and where the driver says,
    # `arg_lanes_tile`: (step, warps)) loop over steps with a running winner per lane;
    # its positions are int32.
    tile = row_tile(O, R, B, arrays=2)
    lanes = spec("arg_lanes_tile", R, B, x.element_size()) if tile is not None else None
    if tile is None:
        bo, br = reduce_blocks(O, R, B)
        warps = warps_for(bo * br)
    elif lanes is None:
        bo, br, warps = tile
    else:
        bo, (br, warps) = 1, lanes
    per_lane = (tile is None or lanes is not None) and R < 2**31 - br
    kern = _arg_lanes_kernel if per_lane else _arg_kernel
    launch(
        kern,
        (cdiv(O, bo),),
        xv,
        vals,
        it,
        O,
        R,
        B,
        neutral,
        IS_MAX=is_max,
        VALUES=vt is not None,
        ACC=TL_DTYPES[acc],
        BLOCK_O=bo,
        BLOCK_R=br,
        NAN_COMBINE=nan_combine,
        num_warps=warps,
    )
    _copy_back(values, vt, indices, it)


def _copy_back(values, vt, indices, it):
    """The results into non-contiguous outputs, where they went through temporaries."""
    if vt is not values:
        copy_kernel((values,), (vt.view(values.shape),))
    if it is not indices:
        copy_kernel((indices,), (it.view(indices.shape),))


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
