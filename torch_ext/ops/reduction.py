"""Reductions: sum, mean, prod, amax/amin, var/std(/_mean), all/any, norm, logsumexp,
cumsum (max/min(dim) and argmax/argmin, which carry an index: reduction_arg.py).

One kernel reduces a tensor viewed as (A, R, B) over R: the outputs are the
A*B pairs (a, b), tiled together with R, so row reductions (B == 1), column
reductions (A == 1) and anything between need no transposing copy.  Reduced
dims that are not one contiguous block of a contiguous tensor are first
gathered to the end with the copy kernel.  Contiguous rows that fit one tile
(ops/_rows.py reduction_tile) are loaded whole, one program per row or several
short rows per program; longer rows loop over tiles, and few outputs of long
rows split R over programs and combine the partials in a second launch.

Kernels follow the structured impl convention (2): fn(*impl_args, *outs).
"""

import math
import torch
import triton
import triton.language as tl

from ..backends import spec
from ._launch import cdiv, compiling, launch
from .copy import copy_kernel
from ._declare import kernel
from ._common import TL_DTYPES, acc_dtype, as_arb
from ._common import reduce_blocks
from ._rows import reduction_tile, row_tile_cap
from ._symbolic import empty, plain, sizes

# Kernel op codes (constexpr so that the kernels may read them as globals).
(
    SUM,
    PROD,
    MAX,
    MIN,
    SQDEV,
    ANY,
    ALL,
    ABS_SUM,
    SQ_SUM,
    ABS_MAX,
    ABS_MIN,
    POW_SUM,
    NONZERO,
    EXP_SUM,
) = [tl.constexpr(i) for i in range(14)]
POST_NONE, POST_SQRT, POST_LOG_ADD, POST_ROOT, POST_GT0, POST_EQ0 = [
    tl.constexpr(i) for i in range(6)
]


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def nan_extreme(t, IS_MAX: tl.constexpr, NAN_COMBINE: tl.constexpr):
    """t's maximum (IS_MAX) or minimum over axis 0, NaN winning as in PyTorch: by a
    NaN-propagating combine (NAN_COMBINE: max.NaN on a GPU), or, where a custom combine
    runs one element at a time (the interpreter), tl.max/min and a NaN flag."""
    if t.dtype.is_floating() and NAN_COMBINE:
        res = tl.reduce(t, 0, _max_nan if IS_MAX else _min_nan)
    else:
        res = tl.max(t, 0) if IS_MAX else tl.min(t, 0)
        if t.dtype.is_floating():
            nan = tl.max((t != t).to(tl.int32), 0) > 0
            res = tl.where(nan, float("nan"), res)
    return res


@triton.jit
def _accumulate(acc, x, r0, r_end, base, omask, B, centre, p, neutral, OP, ACC, BLOCK_R, FIRST):
    """acc (BLOCK_R, BLOCK_O) with the tile of rows r0 + [0, BLOCK_R) (below r_end);
    FIRST: acc is all neutral, the tile's contribution replaces it. Masked elements load
    as `neutral` (no max/min/prod contribution; sums add 0, and the ops that transform
    it mask it out)."""
    r = r0 + tl.arange(0, BLOCK_R)
    m = (r < r_end)[:, None] & omask[None, :]
    raw = tl.load(x + (r[:, None] * B + base[None, :]), mask=m, other=neutral)
    v = raw.to(ACC)
    if OP == SQDEV:
        d = tl.where(m, v - centre[None, :], 0)
        w = d * d
    elif OP == ANY or OP == NONZERO:
        w = (raw != 0).to(ACC)
    elif OP == ALL:
        w = (m & (raw == 0)).to(ACC)
    elif OP == ABS_SUM or OP == ABS_MAX or OP == ABS_MIN:
        w = tl.abs(v)
    elif OP == SQ_SUM:
        w = v * v
    elif OP == POW_SUM:
        av = tl.abs(v)
        # |0|**p is 0 for p > 0 and inf for p < 0 (then the norm is 0).
        pw = tl.exp2((p * tl.log2(av)).to(ACC))
        pw = tl.where(av != 0, pw, tl.where(p < 0, float("inf"), 0.0))
        w = tl.where(m, pw, 0)
    elif OP == EXP_SUM:  # the second pass of logsumexp
        w = tl.where(m, tl.exp(v - centre[None, :]), 0)
    else:  # SUM, PROD, MAX, MIN
        w = v
    if FIRST:
        acc = w
    elif OP == MAX or OP == ABS_MAX:
        acc = tl.maximum(acc, w, propagate_nan=tl.PropagateNan.ALL)  # NaN wins
    elif OP == MIN or OP == ABS_MIN:
        acc = tl.minimum(acc, w, propagate_nan=tl.PropagateNan.ALL)
    elif OP == PROD:
        acc = acc * w
    else:
        acc = acc + w
    return acc


@triton.jit
def _reduce_kernel(
    x,
    out,
    aux,
    O,
    R,
    B,
    R_SPLIT,
    neutral,
    # float64 on every driver: Triton would pass a Python float as float32, which
    # costs float64 reductions (mean's 1/N, a norm's p) half their digits.
    scale: tl.float64,
    p: tl.float64,
    OP: tl.constexpr,
    POST: tl.constexpr,
    ACC: tl.constexpr,
    PARTIAL: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
    # Defaults: the looped kernel that tests_gpu/harness/tune_reduce.py calls directly.
    ONE_TILE: tl.constexpr = False,
    NAN_COMBINE: tl.constexpr = False,
):
    # Program (i, s) reduces outputs o of tile i over r in [s*R_SPLIT, (s+1)*R_SPLIT).
    # PARTIAL: write the un-finished partial result to out[o, s] (a second
    # pass combines the splits and applies scale and POST).
    # ONE_TILE: each lane's R elements fit one tile (R <= BLOCK_R, no split): one load
    # of the whole tile, no loop (ops/_rows.py decides).
    # NAN_COMBINE: max/min (NaN wins) in one reduction whose combine propagates NaN
    # (max.NaN on a GPU); else (the interpreter runs a custom combine one element at a
    # time) tl.max/min, which skip NaN, and a second reduction for "any NaN".
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    split = tl.program_id(1)
    omask = o < O
    a = o // B
    b = o % B
    base = a * R * B + b
    if OP == SQDEV or OP == EXP_SUM or POST == POST_LOG_ADD:
        centre = tl.load(aux + o, mask=omask, other=0).to(ACC)
    else:
        centre = tl.zeros((BLOCK_O,), ACC)  # unused
    if ONE_TILE:
        acc = _accumulate(0, x, 0, R, base, omask, B, centre, p, neutral, OP, ACC, BLOCK_R, True)
    else:
        if PARTIAL:
            r_begin = split.to(tl.int64) * R_SPLIT
            r_end = tl.minimum(r_begin + R_SPLIT, R)
        else:
            r_begin = 0
            r_end = R
        acc = tl.zeros((BLOCK_R, BLOCK_O), ACC) + neutral
        for r0 in range(r_begin, r_end, BLOCK_R):
            acc = _accumulate(
                acc, x, r0, r_end, base, omask, B, centre, p, neutral, OP, ACC, BLOCK_R, False
            )
    if OP == PROD:
        res = tl.reduce(acc, 0, _mul)
    elif OP == MAX or OP == ABS_MAX:
        res = nan_extreme(acc, True, NAN_COMBINE)
    elif OP == MIN or OP == ABS_MIN:
        res = nan_extreme(acc, False, NAN_COMBINE)
    else:
        res = tl.sum(acc, 0)
    if PARTIAL:
        tl.store(out + o * tl.num_programs(1) + split, res.to(out.dtype.element_ty), mask=omask)
        return
    if OP == SUM or OP == SQDEV:
        res = (res * scale).to(ACC)
    if POST == POST_SQRT:
        res = tl.sqrt(res)
    elif POST == POST_LOG_ADD:
        res = tl.where(tl.abs(centre) == float("inf"), centre, tl.log(res) + centre)
    elif POST == POST_ROOT:
        res = tl.where(res == 0, 0.0, tl.exp2((tl.log2(res) / p).to(ACC)))
    elif POST == POST_GT0:
        res = res > 0
    elif POST == POST_EQ0:
        res = res == 0
    if out.dtype.element_ty == tl.bfloat16:
        res = res.to(tl.float32)  # Triton's interpreter casts int64/float64 to bf16 bitwise
    tl.store(out + o, res.to(out.dtype.element_ty), mask=omask)


def normalize_dims(dims, ndim):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % max(ndim, 1) for d in dims}) if ndim > 0 else []


def run_reduce(
    x, A, R, B, out, op, neutral=0, scale=1.0, post=POST_NONE, aux=None, p=1.0, acc=None
):
    """Reduces contiguous x (A, R, B) over R into `out` (A*B elements, any layout)."""
    O = A * B
    if O == 0:
        return out
    acc = acc or acc_dtype(x.dtype)
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    aux_arg = aux if aux is not None else x
    splits, bo, br, warps, one_tile = _config(O, R, B, x.element_size(), acc.itemsize)
    nan_combine = bool(spec("reduction_nan_combine"))
    if splits > 1:
        # Few outputs, long reductions: split R over more programs, then
        # combine the (O, splits) partials. Each split is a whole number of
        # tiles, so every program's loads start aligned.
        r_split = cdiv(cdiv(R, splits), br) * br
        splits = cdiv(R, r_split)
        partial = empty((O, splits), acc, x.device)
        launch(
            _reduce_kernel,
            (cdiv(O, bo), splits),
            x,
            partial,
            aux_arg,
            O,
            R,
            B,
            r_split,
            neutral,
            scale,
            p,
            OP=op,
            POST=POST_NONE,
            ACC=TL_DTYPES[acc],
            PARTIAL=True,
            ONE_TILE=False,
            NAN_COMBINE=nan_combine,
            BLOCK_O=bo,
            BLOCK_R=br,
            num_warps=warps,
        )
        x, R, B, op = partial, splits, 1, _COMBINE[op]
        neutral = _neutral(op, acc)
        bo, br = reduce_blocks(O, R, B)
        warps, one_tile = 4, False
    launch(
        _reduce_kernel,
        (cdiv(O, bo), 1),
        x,
        target,
        aux_arg,
        O,
        R,
        B,
        R,
        neutral,
        scale,
        p,
        OP=op,
        POST=post,
        ACC=TL_DTYPES[acc],
        PARTIAL=False,
        ONE_TILE=one_tile,
        NAN_COMBINE=nan_combine,
        BLOCK_O=bo,
        BLOCK_R=br,
        num_warps=warps,
    )
    if target is not out:
        copy_kernel((out,), (target.view(out.shape),))
    return out


def sum_slices(buf, dtype):
    """buf (S, ...) summed over its first dim into a new tensor of `dtype`: the float32
    partials of a split weight gradient, rounded once by the reduction's own store (a
    sum then a cast took two launches); one slice is only cast."""
    if compiling():  # tuning's compile-only threads: the slices are unwritten there,
        return buf[0]  # and a cast or sum (possibly a replayed plan) would run for real
    if buf.shape[0] == 1:
        return buf[0] if buf.dtype == dtype else buf[0].to(dtype)
    out = torch.empty(tuple(buf.shape[1:]), dtype=dtype, device=buf.device)
    reduce_into(buf, [0], out, SUM)
    return out


# How the partial results of each op combine (and then finish) in a split reduction.
# (Only SUM and SQDEV are scaled, and SQDEV's partials are sums of squares.)
_COMBINE = {
    SUM: SUM,
    PROD: PROD,
    MAX: MAX,
    MIN: MIN,
    SQDEV: SUM,
    ANY: SUM,
    ALL: SUM,
    ABS_SUM: SUM,
    SQ_SUM: SUM,
    ABS_MAX: MAX,
    ABS_MIN: MIN,
    POW_SUM: SUM,
    NONZERO: SUM,
    EXP_SUM: SUM,
}


def _config(O, R, B, elem_size, acc_size=4):
    """(splits, BLOCK_O, BLOCK_R, num_warps, one_tile) of a reduction of (A, R, B) with
    O = A*B outputs: the driver's tuning (spec "reduction_config") if it has one for
    this shape, else tiles of at most `reduction_block` elements and _splits programs
    along R. Where that gives one program per output tile (no split) and the rows are
    contiguous (B == 1) and fit one tile (ops/_rows.py), a program loads its rows'
    tile once instead of looping over R: a single read either way, but the whole row's
    loads are in flight at once (the loop issued one tile per step, the next only
    after the last had arrived). Few outputs of long rows keep the split. An 8-byte
    accumulator (int64, float64) takes two registers a value: it counts as two arrays
    (half the cap, warps for twice the values)."""
    cfg = spec("reduction_config", O, R, B, elem_size)
    if cfg is None:
        splits = _splits(O, R, B)
        bo, br = reduce_blocks(O, cdiv(R, splits), B)
        cfg = splits, bo, br, 4
    if cfg[0] == 1 and B == 1:
        tile = reduction_tile(O, R, elem_size, 2 if acc_size > 4 else 1)
        if tile is not None:
            return (1,) + tile + (True,)
    return cfg + (False,)


def _splits(O, R, B=1):
    """Programs per output tile along R: enough tiles to fill a GPU."""
    n = spec("reduction_splits", O, R)
    if n is not None:
        return n
    tiles = cdiv(O, reduce_blocks(O, R, B)[0])
    # A row a one-tile program reads at once (ops/_rows.py's cap) costs it a few µs on
    # the GPU, less than a second launch that adds split partials (mean of 64x64 float32
    # took two launches: 15.6 µs a call against torch's 8.5, H200).
    if R <= row_tile_cap() or tiles >= 512:
        return 1
    return max(1, min(cdiv(R, 1024), cdiv(1024, tiles)))


def _neutral(op, dtype):
    if op in (MAX, MIN):
        if dtype.is_floating_point:
            return -math.inf if op == MAX else math.inf
        if dtype == torch.bool:
            return 0 if op == MAX else 1
        info = torch.iinfo(dtype)
        return info.min if op == MAX else info.max
    if op == ABS_MIN:
        return math.inf
    return 1 if op == PROD else 0


def reduce_into(x, dims, out, op, scale=1.0, post=POST_NONE, p=1.0, dtype=None):
    dims = normalize_dims(dims, x.dim())
    if x.is_complex():  # sum and mean (their manifest entries let complex through)
        from .complex import sum_views

        xr, outr, real = sum_views(x, out, op == SUM, dtype)
        if not dims:  # a 0-dim input: nothing to reduce
            return outr.copy_(xr.reshape(outr.shape))
        return reduce_into(xr, dims, outr, op, scale=scale, dtype=real)
    if dtype is not None and dtype != x.dtype and op not in (MAX, MIN):
        x = _cast(x, dtype)
    xv, A, R, B = as_arb(x, dims)
    acc = acc_dtype(xv.dtype) if op not in (MAX, MIN) else _minmax_acc(xv.dtype)
    if op in (ANY, ALL, NONZERO):
        acc = torch.int64
    return run_reduce(xv, A, R, B, out, op, _neutral(op, xv.dtype), scale, post, p=p, acc=acc)


def _minmax_acc(dtype):
    if dtype.is_floating_point:
        return acc_dtype(dtype)
    return torch.int64


def _cast(x, dtype):
    y = empty(sizes(x), dtype, x.device)
    copy_kernel((y,), (x,))
    return y


def _numel(x, dims):
    dims = normalize_dims(dims, x.dim())
    shape = sizes(x)
    return math.prod(shape[d] for d in dims) if x.dim() else 1


# -- structured impls (convention (2)) ------------------------------------
# Sizes read through _symbolic (as_arb, run_reduce): declared shapes=True, a reduction's
# launch plan serves every size of its shape class (mean's 1/n pins the reduced size).


@kernel("sum", shapes=True)
def sum_out(
    self: torch.Tensor,
    dim: list[int] | None,
    keepdim: bool,
    dtype: torch.dtype | None,
    out: torch.Tensor,
) -> None:
    """sum.IntList_out impl: (self, dim?, keepdim, dtype?, out)."""
    src_dtype = dtype or (out.dtype if out.dtype.is_floating_point else self.dtype)
    reduce_into(self, dim, out, SUM, dtype=src_dtype)


@kernel("mean", shapes=True)
def mean_out(
    self: torch.Tensor,
    dim: list[int] | None,
    keepdim: bool,
    dtype: torch.dtype | None,
    out: torch.Tensor,
) -> None:
    n = plain(_numel(self, dim))  # a float of it: the plan holds for this count only
    reduce_into(self, dim, out, SUM, scale=(1.0 / n) if n else math.nan, dtype=dtype or out.dtype)


@kernel("prod", shapes=True)
def prod_out(
    self: torch.Tensor, dim: int, keepdim: bool, dtype: torch.dtype | None, out: torch.Tensor
) -> None:
    """prod.int_out impl: (self, dim:int, keepdim, dtype?, out)."""
    reduce_into(self, [dim], out, PROD, dtype=dtype or out.dtype)


@kernel(shapes=True)
def prod_all(self: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """prod (plain): returns a 0-dim tensor."""
    dt = dtype or (torch.int64 if not self.dtype.is_floating_point else self.dtype)
    out = torch.empty((), dtype=dt, device=self.device)
    reduce_into(self, None, out, PROD, dtype=dt)
    return out


@kernel(shapes=True)
def sum_all(self: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    keeps = self.dtype.is_floating_point or self.dtype.is_complex
    dt = dtype or (self.dtype if keeps else torch.int64)
    out = torch.empty((), dtype=dt, device=self.device)
    reduce_into(self, None, out, SUM, dtype=dt)
    return out


@kernel("amax", shapes=True)
def amax_out(self: torch.Tensor, dim: list[int], keepdim: bool, out: torch.Tensor) -> None:
    reduce_into(self, dim, out, MAX)


@kernel("amin", shapes=True)
def amin_out(self: torch.Tensor, dim: list[int], keepdim: bool, out: torch.Tensor) -> None:
    reduce_into(self, dim, out, MIN)


def _check_nonempty(self, name):
    if self.numel() == 0:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for "
            "input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )


@kernel(shapes=True)
def max_all(self: torch.Tensor) -> torch.Tensor:
    _check_nonempty(self, "max")
    out = torch.empty((), dtype=self.dtype, device=self.device)
    reduce_into(self, None, out, MAX)
    return out


@kernel(shapes=True)
def min_all(self: torch.Tensor) -> torch.Tensor:
    _check_nonempty(self, "min")
    out = torch.empty((), dtype=self.dtype, device=self.device)
    reduce_into(self, None, out, MIN)
    return out


@kernel("all", shapes=True)
def all_out(self: torch.Tensor, dim: int, keepdim: bool, out: torch.Tensor) -> None:
    """all.dims_out / all.out (dim int) impls."""
    reduce_into(self, dim if not isinstance(dim, int) else [dim], out, ALL, post=POST_EQ0)


@kernel("any", shapes=True)
def any_out(self: torch.Tensor, dim: int, keepdim: bool, out: torch.Tensor) -> None:
    reduce_into(self, dim if not isinstance(dim, int) else [dim], out, ANY, post=POST_GT0)


@kernel("all_all", shapes=True)
def all_all_out(self: torch.Tensor, out: torch.Tensor) -> None:
    reduce_into(self, None, out, ALL, post=POST_EQ0)


@kernel("any_all", shapes=True)
def any_all_out(self: torch.Tensor, out: torch.Tensor) -> None:
    reduce_into(self, None, out, ANY, post=POST_GT0)
