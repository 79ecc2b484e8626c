"""Building and rearranging tensors: cat, flip, roll, tril/triu, arange, linspace, eye,
repeat_interleave, tril/triu_indices."""

import torch
import triton
import triton.language as tl

from ._common import f64_from_words, f64_words, tl_float_acc
from ._launch import cdiv, launch
from .copy import copy_kernel
from ._common import block_for
from ._common import check_out_overlap, contiguous
from ._declare import Scalar, kernel
from ._common import dot6, unravel6
from .search import _search
from ._common import MAX_RANK, pad_to_rank, scalar_name, wrap_dim
from ._symbolic import max_offset, numel, sizes, strides

# -- roll (plain op, convention (3)): slices joined by our cat kernel -----------


@kernel()
def roll(self: torch.Tensor, shifts: list[int], dims: list[int]) -> torch.Tensor:
    shifts, dims = list(shifts), list(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return contiguous(roll(self.reshape(-1), shifts, [0]).view(self.shape))
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    if self.dim() == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    dims = [wrap_dim(d, self.dim()) for d in dims]
    out = self
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        s = s % n if n else 0
        if s:
            out = torch.cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return contiguous(out) if out is not self else contiguous(self.clone())


# -- cat / flip / tril / triu / arange --------------------------------------


# Sizes read through _symbolic: one launch plan serves a KV cache's every length.
@kernel("cat", shapes=True)
def cat_out(
    tensors: list[torch.Tensor],
    dim: int,
    valid: int,
    all_contiguous: bool,
    all_same_dtype: bool,
    all_same_sizes_and_stride: bool,
    memory_format: torch.memory_format,
    out: torch.Tensor,
) -> None:
    check_out_overlap(out, *tensors)
    if numel(out) == 0:
        return
    if out.is_complex():  # (its manifest entry lets complex through)
        from .complex import cat_complex

        return cat_complex(cat_out, tensors, dim, out)
    parts, offset = [], 0
    for t in tensors:
        shape = sizes(t)
        if t.dim() == 1 and shape[0] == 0 and out.dim() != 1:
            continue  # legacy empty tensors are skipped by cat
        if numel(t):
            parts.append((t, offset))
        offset += shape[dim]
    if out.dim() > MAX_RANK:
        for t, off in parts:
            copy_kernel((out.narrow(dim, off, t.shape[dim]),), (t,))
        return
    # up to _CAT_SLOTS inputs per launch (torch's CUDA cat batches them likewise)
    for k in range(0, len(parts), _CAT_SLOTS):
        group = parts[k : k + _CAT_SLOTS]
        first, last = group[0][1], group[-1][1] + sizes(group[-1][0])[dim]
        whole = first == 0 and last == sizes(out)[dim]
        _cat_launch(group, out if whole else out.narrow(dim, first, last - first), dim, first)


_CAT_SLOTS = 4


@triton.jit
def _cat_slot(v, k, SLOT: tl.constexpr, p, base, i0, i1, i2, i3, i4, i5,
              t0, t1, t2, t3, t4, t5, mask):  # fmt: skip
    here = mask & (k == SLOT)
    x = tl.load(p + base + dot6(i0, i1, i2, i3, i4, i5, t0, t1, t2, t3, t4, t5), mask=here)
    if v.dtype == tl.bfloat16:
        x = x.to(tl.float32)  # Triton's interpreter casts int64/float64 to bfloat16 bitwise
    return tl.where(here, x.to(v.dtype), v)


@triton.jit(do_not_specialize=["e1", "e2", "e3"])
def _cat_kernel(
    out, n, s1, s2, s3, s4, s5, o_t0, o_t1, o_t2, o_t3, o_t4, o_t5,
    p0, p1, p2, p3, b0, b1, b2, b3, e1, e2, e3,
    a0, a1, a2, a3, a4, a5, c0, c1, c2, c3, c4, c5,
    d0, d1, d2, d3, d4, d5, f0, f1, f2, f3, f4, f5,
    DIM: tl.constexpr, NUM: tl.constexpr, BLOCK: tl.constexpr, IDX64: tl.constexpr,
):  # fmt: skip
    # out[i] = input k [i with dim := i_dim - start_k], k the input whose slice
    # along DIM holds i_dim (starts e1 < e2 < e3; base_k = -start_k * stride_k[DIM]).
    # Coordinates in int32 where every offset fits: a 64-bit division per dimension
    # made GPT-2's cat of q, k, v gradients 4x slower than its memory traffic (H200).
    if IDX64:
        o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    i0, i1, i2, i3, i4, i5 = unravel6(o, s1, s2, s3, s4, s5)
    if DIM == 0:
        c = i0
    elif DIM == 1:
        c = i1
    elif DIM == 2:
        c = i2
    elif DIM == 3:
        c = i3
    elif DIM == 4:
        c = i4
    else:
        c = i5
    k = (c >= e1).to(tl.int32) + (c >= e2).to(tl.int32) + (c >= e3).to(tl.int32)
    dt = out.dtype.element_ty
    v = tl.zeros((BLOCK,), dt)
    v = _cat_slot(v, k, 0, p0, b0, i0, i1, i2, i3, i4, i5, a0, a1, a2, a3, a4, a5, mask)
    if NUM > 1:
        v = _cat_slot(v, k, 1, p1, b1, i0, i1, i2, i3, i4, i5, c0, c1, c2, c3, c4, c5, mask)
    if NUM > 2:
        v = _cat_slot(v, k, 2, p2, b2, i0, i1, i2, i3, i4, i5, d0, d1, d2, d3, d4, d5, mask)
    if NUM > 3:
        v = _cat_slot(v, k, 3, p3, b3, i0, i1, i2, i3, i4, i5, f0, f1, f2, f3, f4, f5, mask)
    tl.store(out + dot6(i0, i1, i2, i3, i4, i5, o_t0, o_t1, o_t2, o_t3, o_t4, o_t5), v, mask=mask)


INT32_LIMIT = 2**31  # offsets from here on need 64-bit coordinates


def _cat_launch(group, out, dim, first):
    """One launch writing `out` (the slice of cat's result the group covers) from
    the group's inputs, (tensor, offset along dim in the whole result) each."""
    rank = max(out.dim(), 1)
    pad = MAX_RANK - rank
    n = numel(out)
    ptrs, bases, starts, in_strides = [], [], [], []
    for t, off in group:
        st = pad_to_rank(strides(t) if t.dim() else [0], 0)
        ptrs.append(t)
        starts.append(off - first)
        bases.append(-(off - first) * st[dim + pad])
        in_strides += st
    num = len(group)
    big = 1 << 62  # slots past NUM: no coordinate reaches them
    while len(ptrs) < _CAT_SLOTS:
        ptrs.append(group[0][0])
        bases.append(0)
        starts.append(big)
        in_strides += [0] * MAX_RANK
    shape = pad_to_rank(sizes(out), 1)
    block = block_for(n)
    idx64 = n + block >= INT32_LIMIT or any(
        max_offset(t) >= INT32_LIMIT or abs(b) >= INT32_LIMIT
        for t, b in zip([out] + ptrs, [0] + bases)
    )
    launch(
        _cat_kernel, (cdiv(n, block),), out, n, *shape[1:],
        *pad_to_rank(strides(out), 0), *ptrs, *bases, *starts[1:], *in_strides,
        DIM=dim + pad, NUM=num, BLOCK=block, IDX64=idx64,
    )  # fmt: skip


def cat(tensors, dim=0):
    tensors = list(tensors)
    ref = next((t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)), tensors[0])
    d = dim % max(ref.dim(), 1)
    shape = list(ref.shape)
    shape[d] = sum(
        t.shape[d] for t in tensors if not (t.dim() == 1 and t.shape[0] == 0) or ref.dim() == 1
    )
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    out = torch.empty(shape, dtype=dtype, device=ref.device)
    cat_out(tensors, d, 0, False, False, False, torch.contiguous_format, out)
    return out


@triton.jit
def _strided_copy_kernel(
    src, out, n, base, s1, s2, s3, s4, s5, t0, t1, t2, t3, t4, t5, BLOCK: tl.constexpr
):
    # out (contiguous) = src[base + sum i_d * t_d], strides may be negative.
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    i0, i1, i2, i3, i4, i5 = unravel6(o, s1, s2, s3, s4, s5)
    v = tl.load(src + base + dot6(i0, i1, i2, i3, i4, i5, t0, t1, t2, t3, t4, t5), mask=mask)
    tl.store(out + o, v, mask=mask)


@kernel()
def flip(self: torch.Tensor, dims: list[int]) -> torch.Tensor:
    out = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    n = self.numel()
    if n == 0:
        return out
    dims = {d % max(self.dim(), 1) for d in dims}
    strides = list(self.stride())
    base = 0
    for d in dims:
        if self.dim():
            base += (self.shape[d] - 1) * strides[d]
            strides[d] = -strides[d]
    # base is relative to the tensor's own start: pass the storage view as-is.
    shape = pad_to_rank(self.shape, 1)
    block = block_for(n)
    launch(
        _strided_copy_kernel,
        (cdiv(n, block),),
        self,
        out,
        n,
        base,
        *shape[1:],
        *pad_to_rank(strides, 0),
        BLOCK=block,
    )
    return out


@kernel()
def flip_out(self: torch.Tensor, dims: list[int], out: torch.Tensor) -> None:
    out.resize_(self.shape)  # a plain out= op sizes its own out
    copy_kernel((out,), (flip(self, dims),))


@triton.jit
def _tri_kernel(src, out, n, M, N, diagonal, LOWER: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    j = o % N
    i = (o // N) % M
    if LOWER:
        keep = j - i <= diagonal
    else:
        keep = j - i >= diagonal
    v = tl.load(src + o, mask=mask & keep, other=0)
    tl.store(out + o, v, mask=mask)


def _tri(self, diagonal, out, lower):
    x = contiguous(self)
    n = x.numel()
    if n == 0:
        return
    # Each element reads only itself, so out may alias self.
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    M, N = x.shape[-2], x.shape[-1]
    block = block_for(n)
    launch(_tri_kernel, (cdiv(n, block),), x, target, n, M, N, diagonal, LOWER=lower, BLOCK=block)
    if target is not out:
        copy_kernel((out,), (target,))


@kernel("tril")
def tril_out(self: torch.Tensor, diagonal: int, out: torch.Tensor) -> None:
    _tri(self, diagonal, out, True)


@kernel("triu")
def triu_out(self: torch.Tensor, diagonal: int, out: torch.Tensor) -> None:
    _tri(self, diagonal, out, False)


@triton.jit(do_not_specialize=["a_hi", "a_lo", "s_hi", "s_lo"])
def _arange_kernel(out, n, a_hi, a_lo, s_hi, s_lo, ACC: tl.constexpr, BLOCK: tl.constexpr):
    # Floating: start and step as f64_words (exact); integer: in a_hi and s_hi.
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    if ACC == tl.float64:
        v = f64_from_words(a_hi, a_lo) + o.to(ACC) * f64_from_words(s_hi, s_lo)
    else:
        v = tl.cast(a_hi, ACC) + o.to(ACC) * tl.cast(s_hi, ACC)
    if out.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # Triton's interpreter casts float64 to bfloat16 bitwise
    tl.store(out + o, v.to(out.dtype.element_ty), mask=o < n)


@kernel("arange", shapes=True, size_args=(1,))  # out has the size: `end` is not read
def arange_out(start: Scalar, end: Scalar, step: Scalar, out: torch.Tensor) -> torch.Tensor:
    """arange.start_out (plain): out already has its size (the caller resizes it)."""
    n = numel(out)
    if n == 0:
        return out
    acc = tl.float64 if out.dtype.is_floating_point else tl.int64
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    block = block_for(n)
    if acc == tl.float64:
        words = (*f64_words(start), *f64_words(step))
    else:
        words = (int(start), 0, int(step), 0)
    launch(_arange_kernel, (cdiv(n, block),), target, n, *words, ACC=acc, BLOCK=block)
    if target is not out:
        copy_kernel((out,), (target,))
    return out


@triton.jit(do_not_specialize=["a_hi", "a_lo", "b_hi", "b_lo", "s_hi", "s_lo"])
def _linspace_kernel(
    out, n, a_hi, a_lo, b_hi, b_lo, s_hi, s_lo, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    # PyTorch's symmetric form: from start for the first half, from end after.
    # start, end and step arrive as f64_words (exact).
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    i = o.to(ACC)
    s = f64_from_words(s_hi, s_lo).to(ACC)
    start = f64_from_words(a_hi, a_lo).to(ACC)
    end = f64_from_words(b_hi, b_lo).to(ACC)
    v = tl.where(o < n // 2, start + s * i, end - s * (n - 1 - o).to(ACC))
    tl.store(out + o, v.to(out.dtype.element_ty), mask=o < n)


@kernel("linspace")
def linspace_out(start: Scalar, end: Scalar, steps: int, out: torch.Tensor) -> torch.Tensor:
    """linspace.out (plain): out already has `steps` elements."""
    n = out.numel()
    if n == 0:
        return out
    start, end = float(start), float(end)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    if steps == 1:
        end = start  # a single point is `start`
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    block = block_for(n)
    launch(
        _linspace_kernel,
        (cdiv(n, block),),
        target,
        n,
        *f64_words(start),
        *f64_words(end),
        *f64_words(step),
        ACC=tl_float_acc(out.dtype),
        BLOCK=block,
    )
    if target is not out:
        copy_kernel((out,), (target,))
    return out


@triton.jit
def _eye_kernel(out, n, M, s0, s1, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    i = o // M
    j = o % M
    tl.store(out + i * s0 + j * s1, (i == j).to(out.dtype.element_ty), mask=o < n)


@kernel("eye")
def eye_out(n: int, m: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """eye.m_out (n, m, out) and eye.out (n, out)."""
    if out is None:
        n, m, out = n, n, m
    total = n * m
    if total:
        block = block_for(total)
        launch(_eye_kernel, (cdiv(total, block),), out, total, m, *out.stride(), BLOCK=block)
    return out


@kernel()
def repeat_interleave(repeats: torch.Tensor, output_size: int | None = None) -> torch.Tensor:
    """repeat_interleave.Tensor(repeats, output_size?): i repeated repeats[i] times."""
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype not in (torch.long, torch.int32):
        raise RuntimeError("repeats has to be Long or Int tensor")
    if repeats.numel() and int(torch.amin(repeats).item()) < 0:
        raise RuntimeError("repeats can not be negative")
    cum = torch.cumsum(repeats, 0)
    total = int(cum[-1].item()) if repeats.numel() else 0
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    positions = torch.arange(total, device=repeats.device, dtype=cum.dtype)
    return _search(
        cum, positions, repeats.dtype == torch.int32, True, None, None, "repeat_interleave"
    )


def _tri_indices(row, col, offset, dtype, device, upper):
    if dtype not in (None, torch.int32, torch.int64):  # as PyTorch's kernels
        name = "triu_indices" if upper else "tril_indices"
        raise NotImplementedError(f"\"{name}\" not implemented for '{scalar_name(dtype)}'")
    if row < 0 or col < 0:
        raise RuntimeError(
            f"row must be non-negative, got{row}"
            if row < 0
            else f"col must be non-negative, got{col}"
        )
    r = torch.arange(row, dtype=torch.long, device=device).unsqueeze(1).expand(row, col)
    c = torch.arange(col, dtype=torch.long, device=device).unsqueeze(0).expand(row, col)
    keep = (c - r >= offset) if upper else (c - r <= offset)
    out = torch.stack([torch.masked_select(r, keep), torch.masked_select(c, keep)])
    return out if dtype in (None, torch.long) else out.to(dtype)


@kernel()
def triu_indices(
    row: int,
    col: int,
    offset: int = 0,
    dtype: torch.dtype | None = None,
    layout: torch.layout | None = None,
    device: torch.device | None = None,
    pin_memory: bool | None = None,
) -> torch.Tensor:
    """triu_indices(row, col, offset): (2, N) coordinates of the upper triangle, row-major."""
    return _tri_indices(row, col, offset, dtype, device, True)


@kernel()
def tril_indices(
    row: int,
    col: int,
    offset: int = 0,
    dtype: torch.dtype | None = None,
    layout: torch.layout | None = None,
    device: torch.device | None = None,
    pin_memory: bool | None = None,
) -> torch.Tensor:
    return _tri_indices(row, col, offset, dtype, device, False)


@kernel()
def unfold_backward(
    grad_in: torch.Tensor, input_sizes: list[int], dim: int, size: int, step: int
) -> torch.Tensor:
    """Tensor.unfold's backward: the input's gradient, each element the sum of the window
    elements it appeared as (windows overlap where step < size): one index_add_ along
    `dim` (deterministic in deterministic mode, as index_add_ is)."""
    out = torch.zeros(input_sizes, dtype=grad_in.dtype, device=grad_in.device)
    if len(input_sizes) == 0:  # a 0-d input unfolds to one window of one element
        return out.add_(grad_in.reshape(()))
    dim = wrap_dim(dim, len(input_sizes))
    windows = grad_in.shape[dim]
    if grad_in.numel() == 0:
        return out
    dev = grad_in.device
    at = (
        torch.arange(windows, device=dev)[:, None] * step + torch.arange(size, device=dev)
    ).reshape(-1)
    g = grad_in.movedim(-1, dim + 1).reshape(
        [*input_sizes[:dim], windows * size, *input_sizes[dim + 1 :]]
    )
    return out.index_add_(dim, at, g)
