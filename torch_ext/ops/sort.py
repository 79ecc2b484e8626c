"""sort and topk (structured impls, convention (2)).

  sort.values_stable impl: (self, stable?, dim, descending, values, indices)
  topk.values impl:        (self, k, dim, largest, sorted, values, indices)

Rows of up to MERGE_FROM elements: a rank sort -- each element counts the
elements that precede it (stable: ties keep their original order; NaN is the
largest value, as in PyTorch) and is stored at its rank; O(R^2) work per row,
one launch. Longer rows: a stable merge sort, one launch per doubling of the
sorted runs, each element finding its place in the partner run by binary
search (O(R log^2 R) work). Both are exact for every dtype and need no key
packing.
"""

import torch
import triton
import triton.language as tl

from ..backends import spec
from ._launch import cdiv, launch, next_pow2
from .copy import copy_kernel
from ._common import contiguous, as_arb
from ._declare import kernel
from ._symbolic import empty, view


@triton.jit
def _precedes(vj, vi, j, i, DESCENDING: tl.constexpr):
    nan_i = vi != vi
    nan_j = vj != vj
    if DESCENDING:
        before = (vj > vi) | (nan_j & ~nan_i)
    else:
        before = (vj < vi) | (nan_i & ~nan_j)
    same = (vj == vi) | (nan_i & nan_j)
    return before | (same & (j < i))


@triton.jit
def _rank_sort_kernel(
    x,
    vals,
    idxs,
    R,
    B,
    K,
    DESCENDING: tl.constexpr,
    UPCAST: tl.constexpr,
    BLOCK_I: tl.constexpr,
    BLOCK_J: tl.constexpr,
):
    o = tl.program_id(0).to(tl.int64)
    a = o // B
    b = o % B
    base = a * R * B + b
    i = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    imask = i < R
    vi = tl.load(x + base + i.to(tl.int64) * B, mask=imask, other=0)
    # Compare in float32 (exact): Triton's interpreter compares bf16 as raw bits.
    ki = vi.to(tl.float32) if UPCAST else vi
    rank = tl.zeros((BLOCK_I,), tl.int64)
    for j0 in range(0, R, BLOCK_J):
        j = j0 + tl.arange(0, BLOCK_J)
        jmask = j < R
        vj = tl.load(x + base + j.to(tl.int64) * B, mask=jmask, other=0)
        kj = vj.to(tl.float32) if UPCAST else vj
        p = _precedes(kj[None, :], ki[:, None], j[None, :], i[:, None], DESCENDING)
        rank += tl.sum((p & jmask[None, :]).to(tl.int64), 1)
    keep = imask & (rank < K)
    dst = a * K * B + rank * B + b
    tl.store(vals + dst, vi, mask=keep)
    tl.store(idxs + dst, i.to(tl.int64), mask=keep)


@triton.jit
def _before(a, b, DESCENDING: tl.constexpr):
    """a comes strictly before b (NaN largest)."""
    if DESCENDING:
        r = (a > b) | ((a != a) & (b == b))
    else:
        r = (a < b) | ((b != b) & (a == a))
    return r


@triton.jit
def _merge_pass_kernel(
    src_v,
    src_i,
    dst_v,
    dst_i,
    R,
    L,
    STEPS,
    FIRST: tl.constexpr,
    DESCENDING: tl.constexpr,
    UPCAST: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Runs of L sorted elements merge pairwise into runs of 2L. An element of a
    # left run goes after the partner's elements strictly before it, one of a
    # right run after the partner's elements not after it: stable.
    row = tl.program_id(1).to(tl.int64)
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = p < R
    base = row * R
    v = tl.load(src_v + base + p, mask=mask, other=0)
    if FIRST:
        idx = p
    else:
        idx = tl.load(src_i + base + p, mask=mask, other=0)
    kv = v.to(tl.float32) if UPCAST else v  # the interpreter compares bf16 as raw bits
    run = p // L
    run_start = run * L
    left = (run % 2) == 0
    partner = tl.where(left, run_start + L, run_start - L)
    partner_len = tl.maximum(tl.minimum(partner + L, R) - partner, 0)
    lo = tl.zeros_like(p)
    hi = partner_len
    for _ in range(STEPS):
        active = mask & (lo < hi)
        mid = (lo + hi) // 2
        w = tl.load(src_v + base + partner + mid, mask=active, other=0)
        kw = w.to(tl.float32) if UPCAST else w
        go_right = tl.where(left, _before(kw, kv, DESCENDING), ~_before(kv, kw, DESCENDING))
        lo = tl.where(active & go_right, mid + 1, lo)
        hi = tl.where(active & ~go_right, mid, hi)
    dst = base + (run // 2) * (2 * L) + (p - run_start) + lo
    tl.store(dst_v + dst, v, mask=mask)
    tl.store(dst_i + dst, idx, mask=mask)


MERGE_FROM = 2048


def _merge_sort_rows(x, descending, R=None):
    """(values, indices) of each row of contiguous 2-d x, sorted stably; R (default
    x.shape[1]) may be a size expression of a recording (_symbolic), the outputs then
    have it too."""
    rows = x.shape[0]
    R = x.shape[1] if R is None else R
    bufs = [
        (empty((rows, R), x.dtype, x.device), empty((rows, R), torch.int64, x.device))
        for _ in range(2)
    ]
    block = min(next_pow2(R), spec("pointwise_block", R) or 1024)
    src_v, src_i, L, first, k = x, x, 1, True, 0
    while L < R:
        dst_v, dst_i = bufs[k]
        launch(
            _merge_pass_kernel,
            (cdiv(R, block), rows),
            src_v,
            src_i,
            dst_v,
            dst_i,
            R,
            L,
            L.bit_length() + 1,
            FIRST=first,
            DESCENDING=bool(descending),
            UPCAST=x.dtype == torch.bfloat16,
            BLOCK=block,
        )
        src_v, src_i, L, first, k = dst_v, dst_i, 2 * L, False, 1 - k
    return src_v, src_i


def _merges(rows, R):
    """Whether rows of length R merge-sort: past MERGE_FROM a row is merge-sorted (a
    launch per doubling), unless the driver's comparison budget takes the one-launch
    rank sort's rows * R * R comparisons (cuda: embedding's backward sorts its 4096
    token indices in one launch, not 12 passes)."""
    return R > MERGE_FROM and rows * R * R > (spec("rank_sort_budget") or 0)


def _launch_rank_sort(x, vals, idxs, A, R, B, k, descending):
    """The rank sort of contiguous x seen as (A, R, B), sorting along R, its first k
    ranks stored into vals and idxs laid out (A, k, B)."""
    budget = spec("reduction_block", R) or 4096
    bi = min(next_pow2(R), 64)
    bj = max(1, min(next_pow2(R), budget // bi))
    launch(
        _rank_sort_kernel,
        (A * B, cdiv(R, bi)),
        x,
        vals,
        idxs,
        R,
        B,
        k,
        DESCENDING=bool(descending),
        UPCAST=x.dtype == torch.bfloat16,
        BLOCK_I=bi,
        BLOCK_J=bj,
    )


def stable_sort_1d(x, n):
    """(values, indices) of contiguous 1-d x, its n >= 1 elements sorted stably
    ascending. n may be a size expression of a recording (_symbolic): the outputs,
    launches and the choice of algorithm then keep it, and one launch plan serves other
    lengths (embedding's backward sorts its token indices, deterministic.rows_add_)."""
    if _merges(1, n):
        sv, si = _merge_sort_rows(x.view(1, -1), False, n)
        return view(sv, (n,)), view(si, (n,))
    values, indices = empty((n,), x.dtype, x.device), empty((n,), torch.int64, x.device)
    _launch_rank_sort(x, values, indices, 1, n, 1, n, False)
    return values, indices


def _sort_long(self, dim, descending, k, values, indices):
    x = contiguous(self.movedim(dim, -1))
    lead, R = list(x.shape[:-1]), x.shape[-1]
    rows = x.reshape(-1, R)
    if rows.shape[0] == 0:
        return
    sv, si = _merge_sort_rows(rows, descending)
    sv, si = sv.view(lead + [R])[..., :k], si.view(lead + [R])[..., :k]
    copy_kernel((values,), (sv.movedim(-1, dim),))
    copy_kernel((indices,), (si.movedim(-1, dim),))


def _rank_sort(self, dim, descending, k, values, indices):
    x = self if self.dim() else self.reshape(1)
    d = dim % x.dim()
    R = x.shape[d]
    if _merges(x.numel() // max(R, 1), R):
        return _sort_long(x, d, descending, k, values, indices)
    xv, A, R, B = as_arb(contiguous(x), [d])
    if A * B * k == 0:
        return
    vt = (
        values
        if values.is_contiguous()
        else torch.empty(values.shape, dtype=values.dtype, device=values.device)
    )
    it = (
        indices
        if indices.is_contiguous()
        else torch.empty(indices.shape, dtype=torch.int64, device=indices.device)
    )
    _launch_rank_sort(xv, vt, it, A, R, B, k, descending)
    if vt is not values:
        copy_kernel((values,), (vt.view(values.shape),))
    if it is not indices:
        copy_kernel((indices,), (it.view(indices.shape),))


@kernel("sort")
def sort_out(
    self: torch.Tensor,
    stable: bool | None,
    dim: int,
    descending: bool,
    values: torch.Tensor,
    indices: torch.Tensor,
) -> None:
    n = self.shape[dim] if self.dim() else 1
    _rank_sort(self, dim, descending, n, values, indices)


_CHUNK = 1024


@kernel("topk")
def topk_out(
    self: torch.Tensor,
    k: int,
    dim: int,
    largest: bool,
    sorted: bool,
    values: torch.Tensor,
    indices: torch.Tensor,
) -> None:
    n = self.shape[dim] if self.dim() else 1
    if n > 4 * _CHUNK and k <= _CHUNK // 8:
        _chunked_topk(self, k, dim, largest, values, indices)
    else:
        _rank_sort(self, dim, largest, k, values, indices)


def _chunked_topk(self, k, dim, largest, values, indices):
    # Long rows: the top k of each chunk of _CHUNK, then the top k of those
    # candidates (in chunk order, so ties still go to the lowest index).
    from .binary import add
    from .copy import fill_
    from .shape import arange_out
    from .index import gather_out

    x = contiguous(self.movedim(dim, -1))
    lead, n = list(x.shape[:-1]), x.shape[-1]
    chunks = -(-n // _CHUNK)
    padded = torch.empty(lead + [chunks * _CHUNK], dtype=x.dtype, device=x.device)
    if chunks * _CHUNK != n:
        if x.dtype.is_floating_point:
            pad = float("-inf") if largest else float("inf")
        else:
            info = torch.iinfo(x.dtype)
            pad = info.min if largest else info.max
        fill_(padded[..., n:], pad)
    copy_kernel((padded[..., :n],), (x,))
    pv = padded.view(lead + [chunks, _CHUNK])
    cand_v = torch.empty(lead + [chunks, k], dtype=x.dtype, device=x.device)
    cand_i = torch.empty(lead + [chunks, k], dtype=torch.int64, device=x.device)
    _rank_sort(pv, -1, largest, k, cand_v, cand_i)
    base = torch.empty((chunks, 1), dtype=torch.int64, device=x.device)
    arange_out(0, chunks * _CHUNK, _CHUNK, base.view(-1))
    cand_i = add(cand_i, base, 1).view(lead + [chunks * k])
    cand_v = cand_v.view(lead + [chunks * k])
    top_v = torch.empty(lead + [k], dtype=x.dtype, device=x.device)
    pos = torch.empty(lead + [k], dtype=torch.int64, device=x.device)
    _rank_sort(cand_v, -1, largest, k, top_v, pos)
    top_i = torch.empty(lead + [k], dtype=torch.int64, device=x.device)
    gather_out(cand_i, -1, pos, False, top_i)
    copy_kernel((values,), (top_v.movedim(-1, dim),))
    copy_kernel((indices,), (top_i.movedim(-1, dim),))


def sort(self, dim=-1, descending=False, stable=False):
    values = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    indices = torch.empty(self.shape, dtype=torch.int64, device=self.device)
    sort_out(self, stable, dim, descending, values, indices)
    return values, indices


def topk(self, k, dim=-1, largest=True, sorted=True):
    shape = list(self.shape)
    if shape:
        shape[dim] = k
    values = torch.empty(shape, dtype=self.dtype, device=self.device)
    indices = torch.empty(shape, dtype=torch.int64, device=self.device)
    topk_out(self, k, dim, largest, sorted, values, indices)
    return values, indices
