"""Deterministic accumulation for torch.use_deterministic_algorithms(True).

Our index_add, index_put_(accumulate=True), scatter_add / scatter_reduce(sum, mean)
and embedding's backward add floats with atomics: on a GPU the order of the adds, hence
the rounding, changes from run to run. CUDA computes these deterministically in that
mode, so we do too: `rows_add_` adds rows of values into rows of an output where a row
index may repeat, each output row summed by one program in a fixed order (a stable sort
of the row indices keeps repeated rows in input order), with one rounding per row.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import _bounds
from ._common import contiguous
from ._launch import cdiv, launch, next_pow2
from .copy import copy_kernel
from .sort import stable_sort_1d


def enabled(dtype: torch.dtype) -> bool:
    """Deterministic mode is on and `dtype` sums with rounding (floats)."""
    return dtype.is_floating_point and torch.are_deterministic_algorithms_enabled()


@triton.jit
def _rows_add_kernel(
    out, vals, perm, rows, N, M, D, skip, flag, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    # Program k of the N sorted rows: the first of a run of equal rows sums the run's
    # values (in input order: the sort is stable) and adds them to out[row] once; the
    # others do nothing.
    k = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    cm = cols < D
    row = tl.load(rows + k)
    prev = tl.load(rows + k - 1, mask=k > 0, other=0)
    bad = (row < 0) | (row >= M)
    rowv = row + tl.zeros((1,), tl.int64)
    _bounds.record(flag, rowv, (rowv < 0) | (rowv >= M))
    head = ((k == 0) | (prev != row)) & (row != skip) & (bad == 0)
    acc = tl.zeros((BLOCK,), ACC)
    j = k
    more = head
    while more:
        src = tl.load(perm + j)
        acc += tl.load(vals + src * D + cols, mask=cm, other=0).to(ACC)
        j += 1
        # row >= 0 here: -1 past the end ends the run
        more = tl.load(rows + j, mask=j < N, other=-1) == row
    m = cm & ((tl.zeros((BLOCK,), tl.int32) + head.to(tl.int32)) != 0)
    cur = tl.load(out + row * D + cols, mask=m, other=0).to(ACC)
    tl.store(out + row * D + cols, (cur + acc).to(out.dtype.element_ty), mask=m)


def rows_add_(out, rows, vals, flag=None, skip=-(2**62), n=None):
    """out[rows[k], :] += vals[k, :] for a contiguous 2-d `out` (M, D), rows (N,) and
    vals (N, D); rows equal to `skip` are left out, rows outside [0, M) are recorded in
    `flag` (an _bounds slot, checked by the caller) and left out. `n` (default N) may be
    N as a size expression of a recording (_symbolic): the sort and the launches keep
    it, and one launch plan serves other lengths."""
    M, D = out.shape
    rows = contiguous(rows.reshape(-1).to(torch.int64))
    N = rows.numel() if n is None else n
    if N == 0 or D == 0:
        return out
    vals = contiguous(vals.reshape(rows.numel(), D))
    sorted_rows, perm = stable_sort_1d(rows, N)
    own = flag is None
    if own:
        flag = _bounds.new_flag(out.device, "index", M)
    block = min(next_pow2(D), 1024)
    launch(
        _rows_add_kernel,
        (N, cdiv(D, block)),
        out,
        vals,
        perm,
        sorted_rows,
        N,
        M,
        D,
        skip,
        flag,
        ACC=tl.float64 if out.dtype == torch.float64 else tl.float32,
        BLOCK=block,
    )
    if own:
        _bounds.check(flag)
    return out


def index_add_(out, d, index, source, alpha, flag):
    """out.index_add_(d, index, source, alpha=alpha), deterministically: out moved to
    (S, rest) rows, source to (L, rest)."""
    moved = out.movedim(d, 0)
    target = contiguous(moved)
    vals = source.movedim(d, 0)
    vals = vals * alpha if alpha != 1 else vals
    rows_add_(target.view(target.shape[0], -1), index, contiguous(vals), flag)
    if target.data_ptr() != moved.data_ptr():
        copy_kernel((moved,), (target,))


def scatter_add_(out, dim, index, src, value=0):
    """out.scatter_add_(dim, index, src) (src None: the scalar `value`), deterministically:
    the flat positions that index picks (a gather of positions, with its bounds check)
    are the rows of a one-column rows_add_."""
    pos = torch.arange(out.numel(), device=out.device).view(out.shape)
    lin = torch.gather(pos, dim, index)
    if src is None:
        vals = torch.full(index.shape, value, dtype=out.dtype, device=out.device)
    else:
        vals = src[tuple(slice(0, s) for s in index.shape)] if src.dim() else src
    _flat_add(out, lin, vals)


def index_put_(self, indices, values):
    """self.index_put_(indices, values, accumulate=True), deterministically: the flat
    positions self[indices] names (our index kernel, with its bounds checks and index
    forms) are the rows of a one-column rows_add_."""
    pos = torch.arange(self.numel(), device=self.device).view(self.shape)
    lin = pos[tuple(slice(None) if i is None else i for i in indices)]
    _flat_add(self, lin, values.to(self.dtype).expand(lin.shape))


def _flat_add(out, lin, vals):
    target = contiguous(out)
    rows_add_(target.view(-1, 1), lin, vals)
    if target.data_ptr() != out.data_ptr():
        copy_kernel((out,), (target,))


def embedding_backward_(grad_w, grad, indices, padding_idx, flag, n=None):
    """grad_w (num_weights, D), zeroed, += the rows of grad (N, D) at indices, the
    padding row left out (n: N, see rows_add_)."""
    skip = padding_idx if padding_idx >= 0 else -(2**62)
    rows_add_(grad_w, indices, grad, flag, skip, n)
