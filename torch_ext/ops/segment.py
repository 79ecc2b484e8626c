"""Reductions over index-selected or consecutive groups of slices:

  index_reduce.out impl: (self, dim, index, source, reduce, include_self, out)
      out = self, then source's slice i reduced into out's slice index[i] along dim
      (prod, mean, amax, amin): the scatter_reduce kernel over index broadcast to
      source's shape (one algorithm for both ops, as PyTorch's CPU kernels share).
  segment_reduce(data, reduce, lengths=, indices=, offsets=, axis, unsafe, initial)
      data's slices along `axis` in consecutive segments (lengths, or offsets with one
      more entry), each reduced (sum, mean, max, min, prod) to one slice.
  _segment_reduce_backward(grad, output, data, reduce, lengths=, offsets=, axis, initial)

The segment kernels: one program per (outer index, segment) and block of the inner
slice, looping over the segment's rows: PyTorch's rules for empty segments (the
initial value, or NaN for a mean), NaN propagation in max/min, ties in max/min
sharing the gradient (positive gradients divided by the tie count, as PyTorch's
kernels do) and a product's gradient through zeros (the exclusive product).
"""

import torch
import triton
import triton.language as tl

from ._common import block_for, contiguous, tl_float_acc
from ._declare import Scalar, kernel
from ._launch import cdiv, launch
from .index import scatter_reduce_two_out

_REDUCE = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4}


@kernel("index_reduce")
def index_reduce_out(
    self: torch.Tensor,
    dim: int,
    index: torch.Tensor,
    source: torch.Tensor,
    reduce: str,
    include_self: bool,
    out: torch.Tensor,
) -> None:
    """index_reduce.out impl (PyTorch's meta checked the shapes, dtypes and reduce)."""
    if source.dim() == 0:
        source = source.reshape(1)
    shape = [1] * source.dim()
    shape[dim] = -1
    idx = index.reshape(shape).expand(source.shape)
    scatter_reduce_two_out(self, dim, idx, source, reduce, include_self, out)


@triton.jit
def _segment_fwd_kernel(
    data, offs, out, S, L, INNER, initial,
    MODE: tl.constexpr, HAS_INIT: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    seg = tl.program_id(0)
    o = seg // S
    s = seg % S
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < INNER
    start = tl.load(offs + o * (S + 1) + s)
    end = tl.load(offs + o * (S + 1) + s + 1)
    if HAS_INIT:
        acc = tl.zeros((BLOCK,), ACC) + initial
    elif MODE == 2:
        acc = tl.full((BLOCK,), float("-inf"), ACC)
    elif MODE == 3:
        acc = tl.full((BLOCK,), float("inf"), ACC)
    elif MODE == 4:
        acc = tl.full((BLOCK,), 1.0, ACC)
    else:
        acc = tl.zeros((BLOCK,), ACC)
    base = data + o.to(tl.int64) * L * INNER
    for r in range(start, end):
        v = tl.load(base + r * INNER + cols, mask=ok, other=0).to(ACC)
        if MODE == 2:
            acc = tl.where(v != v, v, tl.where(acc < v, v, acc))
        elif MODE == 3:
            acc = tl.where(v != v, v, tl.where(v < acc, v, acc))
        elif MODE == 4:
            acc = acc * v
        else:
            acc = acc + v
    n = end - start
    if MODE == 1:
        if HAS_INIT:
            acc = tl.where((n > 0) & (acc == acc), acc / n.to(ACC), acc)
        else:
            acc = tl.where(n > 0, acc / tl.maximum(n, 1).to(ACC), float("nan"))
    v = acc
    if out.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(out + seg.to(tl.int64) * INNER + cols, v.to(out.dtype.element_ty), mask=ok)


@triton.jit
def _segment_bwd_kernel(
    grad, output, data, offs, gin, S, L, INNER, initial,
    MODE: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    seg = tl.program_id(0)
    o = seg // S
    s = seg % S
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < INNER
    start = tl.load(offs + o * (S + 1) + s)
    end = tl.load(offs + o * (S + 1) + s + 1)
    n = end - start
    g = tl.load(grad + seg.to(tl.int64) * INNER + cols, mask=ok, other=0).to(ACC)
    y = tl.load(output + seg.to(tl.int64) * INNER + cols, mask=ok, other=0).to(ACC)
    base = o.to(tl.int64) * L * INNER
    count = tl.zeros((BLOCK,), tl.int32)
    if MODE == 2 or MODE == 3:
        for r in range(start, end):
            v = tl.load(data + base + r * INNER + cols, mask=ok, other=0).to(ACC)
            count += ((v != v) | (v == y)).to(tl.int32)
    for r in range(start, end):
        v = tl.load(data + base + r * INNER + cols, mask=ok, other=0).to(ACC)
        if MODE == 0:
            gi = g
        elif MODE == 1:
            gi = g / n.to(ACC)
        elif MODE == 4:
            zero = (v != v) | (v == 0)
            excl = tl.zeros((BLOCK,), ACC) + initial
            if tl.sum(zero.to(tl.int32), 0) > 0:  # the exclusive product, explicitly
                for k in range(start, end):
                    w = tl.load(data + base + k * INNER + cols, mask=ok, other=1).to(ACC)
                    excl = excl * tl.where(k == r, 1.0, w)
            gi = tl.where(zero, g * excl, (g * y) / tl.where(zero, 1.0, v))
        else:
            hit = (v != v) | (v == y)
            gi = tl.where(hit, g, 0.0)
            gi = tl.where((count >= 2) & (gi > 0), gi / count.to(ACC), gi)
        if gin.dtype.element_ty == tl.bfloat16:
            gi = gi.to(tl.float32)
        tl.store(gin + base + r * INNER + cols, gi.to(gin.dtype.element_ty), mask=ok)


def _reduction(reduce):
    if reduce not in _REDUCE:
        raise RuntimeError(f"unsupported reduction given! {reduce}")
    return _REDUCE[reduce]


def _offsets(data, axis, lengths, offsets, name):
    """(offsets as (outer, S + 1) int64, S) from lengths or offsets, PyTorch's checks."""
    if lengths is None and offsets is None:
        raise RuntimeError(f"{name}(): Either lengths or offsets must be defined.")
    t = offsets if offsets is not None else lengths
    what = "offsets" if offsets is not None else "lengths"
    if t.device != data.device:
        raise RuntimeError(f"{name}(): {what} must be on the device of data ({data.device})")
    if data.dim() < t.dim():
        raise RuntimeError(f"{name}(): data has fewer dimensions than {what}")
    if axis != t.dim() - 1:
        raise RuntimeError(
            f"{name}(): Expected axis to be the last dimension of {what} but got {axis}."
        )
    t = t.to(torch.int64)
    outer = 1
    for v in data.shape[:axis]:
        outer *= int(v)
    if offsets is not None:
        return contiguous(t).reshape(outer, t.shape[-1]), t.shape[-1] - 1
    zeros = torch.zeros((*t.shape[:-1], 1), dtype=torch.int64, device=t.device)
    cum = torch.cat([zeros, torch.cumsum(t, -1)], -1)
    return contiguous(cum).reshape(outer, t.shape[-1] + 1), t.shape[-1]


def _geometry(data, axis):
    data = contiguous(data)
    inner = 1
    for v in data.shape[axis + 1 :]:
        inner *= int(v)
    return data, int(data.shape[axis]), inner


def _check_dtype(data, name):
    if not data.dtype.is_floating_point:
        raise RuntimeError(f"\"{name}\" not implemented for '{str(data.dtype)[6:].capitalize()}'")


@kernel()
def segment_reduce(
    data: torch.Tensor,
    reduce: str,
    lengths: torch.Tensor | None = None,
    indices: torch.Tensor | None = None,
    offsets: torch.Tensor | None = None,
    axis: int = 0,
    unsafe: bool = False,
    initial: Scalar | None = None,
) -> torch.Tensor:
    name = "segment_reduce"
    axis = axis % max(data.dim(), 1)
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    mode = _reduction(reduce)
    _check_dtype(data, "_segment_reduce")
    offs, S = _offsets(data, axis, lengths, offsets, name)
    if lengths is not None and offsets is None and not unsafe and lengths.numel():
        if lengths.min().item() < 0:
            raise RuntimeError("lengths contains negative value!")
        if not bool((lengths.sum(-1) == data.shape[axis]).all().item()):
            raise RuntimeError(
                "segment_reduce(): Expected all rows of lengths along axis to sum to "
                "data.size(lengths.dim()-1) when !unsafe."
            )
    x, L, inner = _geometry(data, axis)
    shape = list(data.shape)
    shape[axis] = S
    out = torch.empty(shape, dtype=data.dtype, device=data.device)
    if out.numel() == 0:
        return out
    block = block_for(inner)
    launch(
        _segment_fwd_kernel, (offs.shape[0] * S, cdiv(inner, block)),
        x, offs, out, S, L, inner, float(initial) if initial is not None else 0.0,
        MODE=mode, HAS_INIT=initial is not None, ACC=tl_float_acc(data.dtype), BLOCK=block,
    )  # fmt: skip
    return out


@kernel()
def segment_reduce_backward(
    grad: torch.Tensor,
    output: torch.Tensor,
    data: torch.Tensor,
    reduce: str,
    lengths: torch.Tensor | None = None,
    offsets: torch.Tensor | None = None,
    axis: int = 0,
    initial: Scalar | None = None,
) -> torch.Tensor:
    axis = axis % max(data.dim(), 1)
    mode = _reduction(reduce)
    offs, S = _offsets(data, axis, lengths, offsets, "_segment_reduce_backward")
    x, L, inner = _geometry(data, axis)
    gin = torch.zeros(data.shape, dtype=data.dtype, device=data.device)
    if output.numel() == 0 or data.numel() == 0:
        return gin
    block = block_for(inner)
    launch(
        _segment_bwd_kernel, (offs.shape[0] * S, cdiv(inner, block)),
        contiguous(grad), contiguous(output), x, offs, gin, S, L, inner,
        float(initial) if initial is not None else 1.0,
        MODE=mode, ACC=tl_float_acc(data.dtype), BLOCK=block,
    )  # fmt: skip
    return gin
