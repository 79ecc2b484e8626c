"""Gather and scatter by an index tensor: gather, scatter / scatter_add /
scatter.reduce / scatter_reduce.two, index_copy, index_add, and masked_fill
(index_select and embedding: index_select.py).

Conventions: structured impls (2) for gather.out (self, dim, index, sparse_grad,
out), scatter.src_out (self, dim, index, src, out), scatter.value_out (self, dim,
index, value, out), scatter.reduce_out / value_reduce_out (..., reduce, out),
scatter_add.out (self, dim, index, src, out). Plain (3): masked_fill_(self, mask,
value).

Kernels of arbitrary rank pad the shape to MAX_RANK dimensions.
"""

import triton
import triton.language as tl
import math
import torch

from ._pointwise import pointwise
from . import _bounds
from ._launch import cdiv, launch
from .copy import copy_kernel, fill_kernel
from ._common import check_out_overlap, contiguous
from ._declare import Scalar, kernel
from ._common import MAX_RANK, block_for, dot6, unravel6
from ._common import pad_to_rank
from . import deterministic
from .index_select import indexed_position


@kernel()
def index_copy_out(
    self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, out: torch.Tensor
) -> None:
    """index_copy.out impl: out = self with out.select(dim, index[i]) = source.select(dim, i)."""
    if not (out.data_ptr() == self.data_ptr() and out.stride() == self.stride()):
        out.copy_(self)
    if out.dim() == 0:
        if index.numel():
            out.copy_(source.reshape(()))
        return
    d = dim % out.dim()
    if source.dim() != out.dim() or deterministic.enabled(out.dtype):
        # a 0-dim source, or the deterministic order (last duplicate wins, as
        # torch's CUDA index_copy takes index_put_ there)
        where = (slice(None),) * d + (index.reshape(-1),)
        out[where] = source
        return
    # one launch: a scatter (store) whose index is `index` broadcast along source's
    # other dims (stride 0); a static KV cache writes each layer's K and V this way
    shape = [1] * out.dim()
    shape[d] = -1
    spread = index.reshape(shape).expand(source.shape)
    _gather_scatter(spread, source, out, d, 1)


@triton.jit
def _gather_scatter_kernel(
    index,
    src,
    out,
    n,
    s1,
    s2,
    s3,
    s4,
    s5,
    i_t0,
    i_t1,
    i_t2,
    i_t3,
    i_t4,
    i_t5,
    s_t0,
    s_t1,
    s_t2,
    s_t3,
    s_t4,
    s_t5,
    o_t0,
    o_t1,
    o_t2,
    o_t3,
    o_t4,
    o_t5,
    value,
    size,
    flag,
    DIM: tl.constexpr,
    MODE: tl.constexpr,
    SRC_IS_VALUE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Iterates over the index tensor.  MODE 0 gather: out[i] = src[i with
    # dim := index[i]].  MODE 1/2/3/4/5 store/add/multiply/max/min: out[i with
    # dim := index[i]] (op)= src[i].
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    i0, i1, i2, i3, i4, i5 = unravel6(o, s1, s2, s3, s4, s5)
    idx = tl.load(
        index + dot6(i0, i1, i2, i3, i4, i5, i_t0, i_t1, i_t2, i_t3, i_t4, i_t5),
        mask=mask,
        other=0,
    ).to(tl.int64)
    bad = mask & ((idx < 0) | (idx >= size))
    _bounds.record(flag, idx, bad)
    mask = mask & (bad == 0)
    j0 = idx if DIM == 0 else i0
    j1 = idx if DIM == 1 else i1
    j2 = idx if DIM == 2 else i2
    j3 = idx if DIM == 3 else i3
    j4 = idx if DIM == 4 else i4
    j5 = idx if DIM == 5 else i5
    if MODE == 0:
        v = tl.load(
            src + dot6(j0, j1, j2, j3, j4, j5, s_t0, s_t1, s_t2, s_t3, s_t4, s_t5), mask=mask
        )
        tl.store(
            out + dot6(i0, i1, i2, i3, i4, i5, o_t0, o_t1, o_t2, o_t3, o_t4, o_t5), v, mask=mask
        )
    else:
        if SRC_IS_VALUE:
            # (zeros + value: a runtime fill value; the interpreter has no bf16 maths)
            if out.dtype.element_ty == tl.bfloat16:
                v = (tl.zeros((BLOCK,), tl.float32) + value).to(tl.bfloat16)
            else:
                v = (tl.zeros((BLOCK,), out.dtype.element_ty) + value).to(out.dtype.element_ty)
        else:
            v = tl.load(
                src + dot6(i0, i1, i2, i3, i4, i5, s_t0, s_t1, s_t2, s_t3, s_t4, s_t5), mask=mask
            ).to(out.dtype.element_ty)
        dst = out + dot6(j0, j1, j2, j3, j4, j5, o_t0, o_t1, o_t2, o_t3, o_t4, o_t5)
        if MODE == 1:
            tl.store(dst, v, mask=mask)
        elif MODE == 2:
            tl.atomic_add(dst, v, mask=mask)
        elif MODE == 4:
            tl.atomic_max(dst, v, mask=mask)
        elif MODE == 5:
            tl.atomic_min(dst, v, mask=mask)
        else:
            # multiply: no atomic mul in Triton; a CAS loop per element.  Lanes
            # that are done swap out[0] with itself (atomic_cas takes no mask).
            done = ~mask
            while tl.sum((~done).to(tl.int32), 0) > 0:
                ptr = tl.where(done, out, dst)
                old = tl.load(ptr)
                new = tl.where(done, old, old * v)
                prev = tl.atomic_cas(ptr, old, new)
                done = done | (prev == old) | (old != old)  # NaN stays NaN


def atomic_dtype(dtype):
    """The dtype to accumulate `dtype` in with Triton's atomics: they take no
    bool or 8/16-bit integers; fp16 and bf16 accumulate in float32 and round
    once at the end (as torch's CUDA index_put does), since per-add rounding
    in half precision drifts by several ulps where indices repeat (seen on
    the H200 run of tests/native)."""
    if dtype in (torch.bool, torch.int8, torch.uint8, torch.int16):
        return torch.int32
    if dtype in (torch.float16, torch.bfloat16):
        return torch.float32
    return dtype


def with_atomic_target(out, run):
    """run(target) on `out`, or on an upcast copy with out's strides that is
    written back, when out's dtype cannot take atomics."""
    acc = atomic_dtype(out.dtype)
    if acc == out.dtype:
        return run(out)
    tmp = torch.empty_strided(out.shape, out.stride(), dtype=acc, device=out.device)
    copy_kernel((tmp,), (out,))
    run(tmp)
    copy_kernel((out,), (tmp,))


def _gather_scatter(index, src, out, dim, mode, value=0):
    n = index.numel()
    if n == 0:
        return
    if mode == 2 and deterministic.enabled(out.dtype):  # sums in a fixed order
        return deterministic.scatter_add_(out, dim, index, src, value)
    if mode >= 2 and atomic_dtype(out.dtype) != out.dtype:  # add, multiply (CAS), max, min
        return with_atomic_target(out, lambda t: _gather_scatter(index, src, t, dim, mode, value))
    rank = max(index.dim(), 1)
    pad = MAX_RANK - rank
    shape = pad_to_rank(index.shape if index.dim() else [1], 1)
    i_st = pad_to_rank(index.stride() if index.dim() else [0], 0)
    s_st = pad_to_rank(src.stride() if src is not None and src.dim() else [0], 0)
    o_st = pad_to_rank(out.stride() if out.dim() else [0], 0)
    block = block_for(n)
    d = dim % rank
    indexed = src if mode == 0 else out
    size = indexed.shape[d] if indexed.dim() else 1
    flag = _bounds.new_flag(
        out.device,
        exc=RuntimeError,
        message=f"index {{}} is out of bounds for dimension {d} with size {size}",
    )
    launch(
        _gather_scatter_kernel,
        (cdiv(n, block),),
        index,
        src if src is not None else out,
        out,
        n,
        *shape[1:],
        *i_st,
        *s_st,
        *o_st,
        value,
        size,
        flag,
        DIM=d + pad,
        MODE=mode,
        SRC_IS_VALUE=src is None,
        BLOCK=block,
    )
    _bounds.check(flag)


@kernel("gather")
def gather_out(
    self: torch.Tensor, dim: int, index: torch.Tensor, sparse_grad: bool, out: torch.Tensor
) -> None:
    check_out_overlap(out, self, partial=(index,))
    _gather_scatter(index, self, out, dim, 0)


def _scatter_prepare(self, out):
    if out.data_ptr() != self.data_ptr() or out.stride() != self.stride():
        copy_kernel((out,), (self,))


_REDUCE_MODE = {None: 1, "add": 2, "sum": 2, "multiply": 3}


@kernel("scatter_src")
def scatter_src_out(
    self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor, out: torch.Tensor
) -> None:
    _scatter_prepare(self, out)
    _gather_scatter(index, src, out, dim, 1)


@kernel("scatter_value")
def scatter_value_out(
    self: torch.Tensor, dim: int, index: torch.Tensor, value: Scalar, out: torch.Tensor
) -> None:
    _scatter_prepare(self, out)
    _gather_scatter(index, None, out, dim, 1, value)


@kernel("scatter_reduce")
def scatter_reduce_out(
    self: torch.Tensor,
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str,
    out: torch.Tensor,
) -> None:
    _scatter_prepare(self, out)
    _gather_scatter(index, src, out, dim, _REDUCE_MODE[reduce])


@kernel("scatter_value_reduce")
def scatter_value_reduce_out(
    self: torch.Tensor, dim: int, index: torch.Tensor, value: Scalar, reduce: str, out: torch.Tensor
) -> None:
    _scatter_prepare(self, out)
    _gather_scatter(index, None, out, dim, _REDUCE_MODE[reduce], value)


@kernel("scatter_reduce_two")
def scatter_reduce_two_out(
    self: torch.Tensor,
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str,
    include_self: bool,
    out: torch.Tensor,
) -> None:
    """scatter_reduce.two_out impl: (self, dim, index, src, reduce, include_self, out);
    reduce in sum, prod, mean, amax, amin."""
    _scatter_prepare(self, out)
    if index.numel() == 0:
        return
    if reduce == "mean":
        from .binary import div_floor, div_true

        counts = torch.empty(out.shape, dtype=out.dtype, device=out.device)
        fill_kernel((counts,), (), out.dtype, 1 if include_self else 0)
        if not include_self:
            _gather_scatter(index, None, out, dim, 1, 0)
        _gather_scatter(index, None, counts, dim, 2, 1)
        _gather_scatter(index, src, out, dim, 2)
        from .ternary import clamp_min_scalar

        counts = clamp_min_scalar(counts, 1)
        div = div_true if out.dtype.is_floating_point else div_floor
        div.iter((out,), (out, counts), out.dtype)
        return
    mode = {"sum": 2, "prod": 3, "amax": 4, "amin": 5}[reduce]
    if not include_self:
        if out.dtype.is_floating_point:
            identity = {2: 0, 3: 1, 4: float("-inf"), 5: float("inf")}[mode]
        else:
            info = torch.iinfo(out.dtype) if out.dtype != torch.bool else None
            identity = {2: 0, 3: 1, 4: info.min if info else 0, 5: info.max if info else 1}[mode]
        _gather_scatter(index, None, out, dim, 1, identity)
    _gather_scatter(index, src, out, dim, mode)


@kernel("scatter_add")
def scatter_add_out(
    self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor, out: torch.Tensor
) -> None:
    _scatter_prepare(self, out)
    _gather_scatter(index, src, out, dim, 2)


# -- masked_fill ------------------------------------------------------------


@pointwise(num_inputs=2, cast=[True, False])
@triton.jit
def _masked_fill(x, m, value):
    return tl.where(m != 0, value, x)


@kernel()
def masked_fill_(
    self: torch.Tensor, mask: torch.Tensor, value: torch.Tensor | Scalar
) -> torch.Tensor:
    """masked_fill_.Scalar / .Tensor (value a number or 0-dim tensor)."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise RuntimeError(
                f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                f"tensor with {value.dim()} dimension(s)."
            )
        value = value.item()
    _masked_fill.iter((self,), (self, mask.expand(self.shape)), self.dtype, value)
    return self


def masked_fill(self, mask, value):
    out = torch.empty(
        torch.broadcast_shapes(self.shape, mask.shape), dtype=self.dtype, device=self.device
    )
    copy_kernel((out,), (self.expand(out.shape),))
    return masked_fill_(out, mask, value)


# -- index_add / linspace / eye -----------------------------------------------


@triton.jit
def _index_add_kernel(
    src, index, out, n, L, S, B, s_a, s_l, s_b, o_a, o_s, o_b, alpha, flag, BLOCK: tl.constexpr
):
    # out[a, index[l], b] += alpha * src[a, l, b]
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    a, l, b, idx, mask = indexed_position(index, o, mask, L, S, B, flag)
    v = tl.load(src + a * s_a + l * s_l + b * s_b, mask=mask, other=0)
    v = (v * alpha).to(out.dtype.element_ty)
    tl.atomic_add(out + a * o_a + idx * o_s + b * o_b, v, mask=mask)


@kernel("index_add")
def index_add_out(
    self: torch.Tensor,
    dim: int,
    index: torch.Tensor,
    source: torch.Tensor,
    alpha: Scalar,
    out: torch.Tensor,
) -> None:
    """index_add.out impl: (self, dim, index, source, alpha, out)."""
    if out.data_ptr() != self.data_ptr() or out.stride() != self.stride():
        copy_kernel((out,), (self,))
    if source.numel() == 0:
        return
    d = dim % max(out.dim(), 1)
    shape = list(out.shape) if out.dim() else [1]
    A, S, B = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])
    src = contiguous(source.reshape(source.shape if source.dim() else [1]))
    L = index.numel()
    flag = _bounds.new_flag(out.device, "index_add", S)
    if deterministic.enabled(out.dtype):  # each output row summed in a fixed order
        o = out if out.dim() else out.view(1)
        deterministic.index_add_(o, d, index.reshape(-1), src, alpha, flag)
        _bounds.check(flag)
        return
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    if target is not out:
        copy_kernel((target,), (out,))
    n = A * L * B
    block = block_for(n)
    launch(
        _index_add_kernel,
        (cdiv(n, block),),
        src,
        contiguous(index.reshape(-1)),
        target,
        n,
        L,
        S,
        B,
        L * B,
        B,
        1,
        S * B,
        B,
        1,
        alpha,
        flag,
        BLOCK=block,
    )
    _bounds.check(flag)
    if target is not out:
        copy_kernel((out,), (target,))
