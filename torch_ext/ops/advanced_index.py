"""Data-dependent indexing: nonzero, masked_select, index (advanced
indexing), index_put_, repeat, randperm, multinomial.  Plain ops (3):

  nonzero(self) / nonzero_out(self, out)
  masked_select(self, mask)
  index(self, indices: list[Tensor | None])               aten::index.Tensor
  index_put_(self, indices, values, accumulate)           aten::index_put_
  _index_put_impl_(self, indices, values, accumulate, unsafe)
  repeat(self, repeats)
  randperm_out(n, generator, out)                         randperm.generator_out
  multinomial(self, num_samples, replacement, generator)

Output sizes that depend on the data (nonzero, masked_select) read one count
back to the host.
"""

import math
import torch
import triton
import triton.language as tl

from ._common import float_acc
from . import _bounds
from ._launch import cdiv, launch
from .copy import copy_kernel
from ._common import MAX_RANK, block_for, dot6, pad_to_rank, unravel6
from .index import with_atomic_target
from ._common import alert_not_deterministic, check_out_overlap, contiguous
from . import deterministic
from .scan import cumsum_out
from ._declare import Scalar, kernel
from ._common import wrap_dim, write_result

MAX_INDICES = 4


@triton.jit
def _nonzero_kernel(
    x,
    csum,
    out,
    vals,
    n,
    s1,
    s2,
    s3,
    s4,
    s5,
    NDIM: tl.constexpr,
    WITH_VALUES: tl.constexpr,
    BLOCK: tl.constexpr,
):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    hit = mask & (tl.load(x + o, mask=mask, other=0) != 0)
    pos = tl.load(csum + o, mask=hit, other=1) - 1
    if WITH_VALUES:
        v = tl.load(vals + o, mask=hit)
        tl.store(out + pos, v, mask=hit)
    else:
        i0, i1, i2, i3, i4, i5 = unravel6(o, s1, s2, s3, s4, s5)
        # Coordinates of the last NDIM padded dimensions.
        base = pos * NDIM
        if NDIM >= 6:
            tl.store(out + base + (NDIM - 6), i0, mask=hit)
        if NDIM >= 5:
            tl.store(out + base + (NDIM - 5), i1, mask=hit)
        if NDIM >= 4:
            tl.store(out + base + (NDIM - 4), i2, mask=hit)
        if NDIM >= 3:
            tl.store(out + base + (NDIM - 3), i3, mask=hit)
        if NDIM >= 2:
            tl.store(out + base + (NDIM - 2), i4, mask=hit)
        tl.store(out + base + (NDIM - 1), i5, mask=hit)


def _compact(x, values=None):
    """(csum, count) of the non-zeros of contiguous x."""
    n = x.numel()
    csum = torch.empty((n,), dtype=torch.int64, device=x.device)
    if n == 0:
        return csum, 0
    if x.dtype != torch.bool:
        from .binary import ne

        x = ne(x, 0)
    cumsum_out(x.reshape(-1), 0, torch.int64, csum)
    count = int(csum[n - 1 :].cpu().item())
    return csum, count


@kernel()
def nonzero(self: torch.Tensor) -> torch.Tensor:
    x = contiguous(self)
    csum, count = _compact(x)
    ndim = x.dim()
    out = torch.empty((count, ndim), dtype=torch.int64, device=x.device)
    if count and ndim:
        shape = pad_to_rank(x.shape, 1)
        n = x.numel()
        block = block_for(n)
        launch(
            _nonzero_kernel,
            (cdiv(n, block),),
            x,
            csum,
            out,
            x,
            n,
            *shape[1:],
            NDIM=ndim,
            WITH_VALUES=False,
            BLOCK=block,
        )
    return out


@kernel()
def nonzero_out(self: torch.Tensor, out: torch.Tensor) -> None:
    res = nonzero(self)
    if out.shape != res.shape:
        out.resize_(res.shape)
    copy_kernel((out,), (res,))


@kernel()
def masked_select(self: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    shape = torch.broadcast_shapes(self.shape, mask.shape)
    m = contiguous(mask.expand(shape))
    v = contiguous(self.expand(shape))
    csum, count = _compact(m)
    out = torch.empty((count,), dtype=self.dtype, device=self.device)
    if count:
        n = m.numel()
        block = block_for(n)
        launch(
            _nonzero_kernel,
            (cdiv(n, block),),
            m,
            csum,
            out,
            v,
            n,
            1,
            1,
            1,
            1,
            1,
            NDIM=1,
            WITH_VALUES=True,
            BLOCK=block,
        )
    return out


@kernel()
def masked_select_out(self: torch.Tensor, mask: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    check_out_overlap(out, self, mask)
    if out.dtype != self.dtype:
        raise RuntimeError("masked_select(): self and result must have the same scalar type")
    write_result(out, masked_select(self, mask))
    return out


@triton.jit
def _index_kernel(
    src,
    out,
    i0p,
    i1p,
    i2p,
    i3p,
    t0,
    t1,
    t2,
    t3,
    n,
    L,
    R,
    d1,
    d2,
    d3,
    d4,
    d5,
    r0,
    r1,
    r2,
    r3,
    r4,
    r5,
    PUT: tl.constexpr,
    ACCUMULATE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Element (l, rest) of the result: l walks the broadcast index tensors,
    # rest the non-indexed dims.  src offset = sum_k idx_k[l] * t_k + rest . r
    # (PUT swaps the roles: out[offset] = src[l, rest]).
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    l = o // R
    rest = o % R
    j0, j1, j2, j3, j4, j5 = unravel6(rest, d1, d2, d3, d4, d5)
    off = dot6(j0, j1, j2, j3, j4, j5, r0, r1, r2, r3, r4, r5)
    i0 = tl.load(i0p + l, mask=mask, other=0)
    i1 = tl.load(i1p + l, mask=mask, other=0)
    i2 = tl.load(i2p + l, mask=mask, other=0)
    i3 = tl.load(i3p + l, mask=mask, other=0)
    # An index out of range was recorded by _wrap_kernel and replaced by -1.
    ok = mask & (i0 >= 0) & (i1 >= 0) & (i2 >= 0) & (i3 >= 0)
    off += i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3
    if PUT:
        v = tl.load(src + o, mask=ok).to(out.dtype.element_ty)
        if ACCUMULATE:
            tl.atomic_add(out + off, v, mask=ok)
        else:
            tl.store(out + off, v, mask=ok)
    else:
        tl.store(out + o, tl.load(src + off, mask=ok, other=0), mask=mask)


def _prepare_indices(self, indices):
    """Long index tensors (bool masks expanded), their dims, broadcast shape."""
    dims, tensors = [], []
    d = 0
    for idx in indices:
        if idx is None:
            d += 1
            continue
        if idx.device != self.device:  # PyTorch accepts CPU indices for device tensors
            idx = idx.to(self.device)
        if idx.dtype in (torch.bool, torch.uint8):
            nz = nonzero(idx)
            for k in range(idx.dim()):
                dims.append(d + k)
                tensors.append(nz[:, k])
            d += idx.dim()
        else:
            dims.append(d)
            tensors.append(idx)
            d += 1
    if len(tensors) > MAX_INDICES:
        raise NotImplementedError(f"torch_ext: more than {MAX_INDICES} index tensors")
    shape = torch.broadcast_shapes(*[t.shape for t in tensors])
    L = math.prod(shape)
    longs = []
    for t, dim in zip(tensors, dims):
        t = contiguous(t.expand(shape)).reshape(-1)
        if t.dtype != torch.int64:
            c = torch.empty(t.shape, dtype=torch.int64, device=t.device)
            copy_kernel((c,), (t,))
            t = c
        longs.append(_wrap_negative(t, self.shape[dim], dim))
    return dims, longs, list(shape), L


@triton.jit
def _wrap_kernel(t, n, size, flag, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    v = tl.load(t + o, mask=mask, other=0)
    bad = mask & ((v < -size) | (v >= size))
    _bounds.record(flag, v, bad)
    tl.store(t + o, tl.where(bad, -1, tl.where(v < 0, v + size, v)), mask=mask)


def _wrap_negative(t, size, dim):
    """A copy of index tensor t with negative indices wrapped; indices out of
    [-size, size) become -1 (masked off by _index_kernel) and raise IndexError."""
    t2 = torch.empty(t.shape, dtype=torch.int64, device=t.device)
    copy_kernel((t2,), (t,))
    n = t2.numel()
    if n:
        block = block_for(n)
        message = f"index {{}} is out of bounds for dimension {dim} with size {size}"
        flag = _bounds.new_flag(t.device, exc=IndexError, message=message)
        launch(_wrap_kernel, (cdiv(n, block),), t2, n, size, flag, BLOCK=block)
        _bounds.check(flag)
    return t2


def _index_launch(self, src, out, dims, longs, L, rest_dims, put, accumulate):
    rest_shape = [self.shape[d] for d in rest_dims]
    R = math.prod(rest_shape)
    n = L * R
    if n == 0:
        return
    rs = pad_to_rank(rest_shape, 1)
    rst = pad_to_rank([self.stride(d) for d in rest_dims], 0)
    ptrs = longs + [longs[0]] * (MAX_INDICES - len(longs))
    strides = [self.stride(d) for d in dims] + [0] * (MAX_INDICES - len(longs))
    block = block_for(n)
    launch(
        _index_kernel,
        (cdiv(n, block),),
        src,
        out,
        *ptrs,
        *strides,
        n,
        L,
        R,
        *rs[1:],
        *rst,
        PUT=put,
        ACCUMULATE=accumulate,
        BLOCK=block,
    )


def _result_layout(self, dims, ishape):
    rest_dims = [d for d in range(self.dim()) if d not in dims]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    # Kernel order: index dims first, then the rest; the result puts the index
    # dims where the indexed dims were when they are adjacent.
    kshape = ishape + [self.shape[d] for d in rest_dims]
    lead = dims[0] if adjacent else 0
    perm = (
        list(range(len(ishape), len(ishape) + lead))
        + list(range(len(ishape)))
        + list(range(len(ishape) + lead, len(kshape)))
    )
    return rest_dims, kshape, perm


@kernel()
def index(self: torch.Tensor, indices: list[torch.Tensor | None]) -> torch.Tensor:
    if self.dim() > MAX_RANK:
        raise NotImplementedError("torch_ext: index on tensors of rank > 6")
    dims, longs, ishape, L = _prepare_indices(self, indices)
    rest_dims, kshape, perm = _result_layout(self, dims, ishape)
    tmp = torch.empty(kshape, dtype=self.dtype, device=self.device)
    _index_launch(self, self, tmp, dims, longs, L, rest_dims, False, False)
    view = tmp.permute(perm)
    if perm == sorted(perm):
        return tmp
    out = torch.empty(view.shape, dtype=self.dtype, device=self.device)
    copy_kernel((out,), (view,))
    return out


def index_put_(self, indices, values, accumulate=False):
    if accumulate and deterministic.enabled(self.dtype):  # sums in a fixed order
        deterministic.index_put_(self, indices, values)
        return self
    dims, longs, ishape, L = _prepare_indices(self, indices)
    rest_dims, kshape, perm = _result_layout(self, dims, ishape)
    # values broadcast to the result's shape, then laid out in kernel order.
    res_shape = [kshape[p] for p in perm]
    v = values.expand(res_shape) if values.dim() <= len(res_shape) else values
    inv = [perm.index(i) for i in range(len(perm))]
    vk = torch.empty(kshape, dtype=self.dtype, device=self.device)
    copy_kernel((vk,), (v.permute(inv),))
    if accumulate:
        with_atomic_target(
            self, lambda t: _index_launch(t, vk, t, dims, longs, L, rest_dims, True, True)
        )
    else:
        _index_launch(self, vk, self, dims, longs, L, rest_dims, True, False)
    return self


@kernel()
def _index_put_impl_(
    self: torch.Tensor,
    indices: list[torch.Tensor | None],
    values: torch.Tensor,
    accumulate: bool = False,
    unsafe: bool = False,
) -> torch.Tensor:
    return index_put_(self, indices, values, accumulate)


@kernel()
def repeat(self: torch.Tensor, repeats: list[int]) -> torch.Tensor:
    repeats = list(repeats)
    pad = len(repeats) - self.dim()
    x = self.reshape([1] * pad + list(self.shape))
    out_shape = [r * s for r, s in zip(repeats, x.shape)]
    out = torch.empty(out_shape, dtype=self.dtype, device=self.device)
    if out.numel() == 0:
        return out
    # out viewed as (r0, s0, r1, s1, ...) is x broadcast over the r's.
    inter = [v for r, s in zip(repeats, x.shape) for v in (r, s)]
    src = x.reshape([v for s in x.shape for v in (1, s)]).expand(inter)
    copy_kernel((out.view(inter),), (src,))
    return out


@kernel("randperm")
def randperm_out(n: int, generator: torch.Generator | None, out: torch.Tensor) -> torch.Tensor:
    from .random import _fill_random, UNIFORM
    from .sort import sort_out

    keys = torch.empty((n,), dtype=torch.float32, device=out.device)
    _fill_random(keys, UNIFORM, 0.0, 1.0, generator=generator)
    vals = torch.empty((n,), dtype=torch.float32, device=out.device)
    idx = torch.empty((n,), dtype=torch.int64, device=out.device)
    sort_out(keys, True, 0, False, vals, idx)
    copy_kernel((out,), (idx,))
    return out


@triton.jit
def _sample_kernel(cdf, u, out, R, S, BLOCK: tl.constexpr):
    # out[row, s] = #{r : cdf[row, r] <= u[row, s] * cdf[row, R-1]}, clamped.
    row = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    smask = s < S
    total = tl.load(cdf + row * R + R - 1)
    uv = tl.load(u + row * S + s, mask=smask, other=0) * total
    cnt = tl.zeros((BLOCK,), tl.int64)
    for r in range(0, R):
        c = tl.load(cdf + row * R + r)
        cnt += (c <= uv).to(tl.int64)
    tl.store(out + row * S + s, tl.minimum(cnt, R - 1), mask=smask)


@kernel()
def multinomial(
    self: torch.Tensor,
    num_samples: int,
    replacement: bool = False,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    from .random import _fill_random, UNIFORM, EXPONENTIAL
    from .sort import topk_out

    p = contiguous(self if self.dim() == 2 else self.reshape(1, -1))
    rows, R = p.shape
    out = torch.empty((rows, num_samples), dtype=torch.int64, device=self.device)
    if replacement:
        cdf = torch.empty(
            (rows, R),
            dtype=float_acc(p.dtype),
            device=p.device,
        )
        cumsum_out(p, 1, cdf.dtype, cdf)
        u = torch.empty((rows, num_samples), dtype=cdf.dtype, device=p.device)
        _fill_random(u, UNIFORM, 0.0, 1.0, generator=generator)
        launch(
            _sample_kernel, (rows, cdiv(num_samples, 128)), cdf, u, out, R, num_samples, BLOCK=128
        )
    else:
        # Exponential races: argmin of E_i / p_i samples without replacement.
        from .binary import div_true

        e = torch.empty((rows, R), dtype=torch.float32, device=p.device)
        _fill_random(e, EXPONENTIAL, 1.0, generator=generator)
        keys = div_true(e, p)
        vals = torch.empty((rows, num_samples), dtype=keys.dtype, device=p.device)
        topk_out(keys, num_samples, 1, False, True, vals, out)
    return out if self.dim() == 2 else out.view(num_samples)


# -- indexing by flat position and masks ------------------------------------


def _check_index(index, size, what):
    if index.dtype not in (torch.long, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise IndexError(f"{what}: expected an integer index tensor, got {index.dtype}")
    if index.numel():
        lo, hi = torch.aminmax(index.reshape(-1))
        lo, hi = int(lo.item()), int(hi.item())
        bad = lo if lo < -size else (hi if hi >= size else None)
        if bad is not None:
            raise IndexError(f"{what}: index {bad} is out of bounds for size {size}")
    return torch.where(index < 0, index + size, index).to(torch.long)


@kernel()
def take(self: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """take(self, index): self viewed as 1-d, read at `index` (negative wraps)."""
    idx = _check_index(index, self.numel(), "take")
    flat = self.reshape(-1)
    return torch.index_select(flat, 0, idx.reshape(-1)).reshape(index.shape)


@kernel()
def take_out(self: torch.Tensor, index: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    check_out_overlap(out, index, self)
    write_result(out, take(self, index))
    return out


@kernel()
def put_(
    self: torch.Tensor, index: torch.Tensor, source: torch.Tensor, accumulate: bool = False
) -> torch.Tensor:
    """put_(self, index, source, accumulate): self viewed as 1-d, written at `index`."""
    alert_not_deterministic("put_")
    if source.dtype != self.dtype:
        raise RuntimeError(
            f"put_(): self ({self.dtype}) and source ({source.dtype}) must have "
            f"the same scalar type"
        )
    if index.numel() != source.numel():
        raise RuntimeError(
            f"put_(): Expected source and index to have the same number of "
            f"elements, but got source.numel() = {source.numel()}, "
            f"index.numel() = {index.numel()}"
        )
    idx = _check_index(index, self.numel(), "put_").reshape(-1)
    target = self if self.is_contiguous() else self.contiguous()
    target.view(-1).index_put_((idx,), source.reshape(-1), accumulate)
    if target is not self:
        copy_kernel((self,), (target,))
    return self


@kernel()
def index_fill_(
    self: torch.Tensor, dim: int, index: torch.Tensor, value: torch.Tensor | Scalar
) -> torch.Tensor:
    """index_fill_.int_Scalar / .int_Tensor: self[..., index, ...] = value along dim."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise RuntimeError(
                f"index_fill_ only supports a 0-dimensional value tensor, but got "
                f"tensor with {value.dim()} dimension(s)."
            )
        value = value.item()
    if index.dim() > 1:
        raise IndexError("Index has to be a vector/scalar")
    d = wrap_dim(dim, self.dim())
    size = self.shape[d] if self.dim() else 1
    idx = _check_index(index, size, "index_fill_").reshape(-1)
    if idx.numel() == 0:
        return self
    mask = torch.zeros(size, dtype=torch.bool, device=self.device)
    mask.index_put_((idx,), torch.ones([], dtype=torch.bool, device=self.device))
    shape = [1] * self.dim()
    if self.dim():
        shape[d] = size
    self.masked_fill_(mask.reshape(shape), value)
    return self


@kernel()
def masked_scatter_(self: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """masked_scatter_(self, mask, source): the True positions of mask
    (broadcast to self), in order, take source's leading elements."""
    if mask.dtype != torch.bool:
        raise RuntimeError(
            f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}"
        )
    if source.dtype != self.dtype:
        raise RuntimeError(
            f"masked_scatter_: expected self and source to have same dtypes but got "
            f"{self.dtype} and {source.dtype}"
        )
    m = mask.expand(self.shape)
    count = int(m.sum().item())
    if count > source.numel():
        raise RuntimeError("masked_scatter_: Number of elements of source < number of ones in mask")
    if count:
        self.index_put_((m,), source.reshape(-1)[:count])
    return self
