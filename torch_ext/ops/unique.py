"""unique and unique_consecutive: of the flattened tensor, and of the slices along a dim
(torch.unique(x, dim=d): the distinct sub-tensors x.select(d, i), sorted
lexicographically, as CUDA and the CPU return them).

All of it is device ops (the sorts, gathers, scans and compaction of the other families):
values sorted, equal neighbours marked, their run ids scanned, the first of each run kept.
Slices are ordered by one stable sort per element of a slice, last element first (a least
significant digit radix sort whose digits are whole elements), so equal slices end up
next to each other and every slice is compared with its neighbour only."""

import torch

from ._common import wrap_dim
from ._declare import kernel


def _empty_long(device):
    return torch.empty(0, dtype=torch.long, device=device)


def _counts(first, n):
    """Run lengths from the first-of-run mask of n elements (or slices)."""
    starts = torch.nonzero(first).reshape(-1)
    ends = torch.cat([starts[1:], torch.full([1], n, dtype=torch.long, device=first.device)])
    return ends - starts


def _first_of_runs(differs):
    """The first-of-run mask of n things from `differs` (n - 1 flags: thing i + 1 is not
    thing i) and every thing's run id."""
    first = torch.ones(differs.numel() + 1, dtype=torch.bool, device=differs.device)
    first[1:] = differs
    return first, torch.cumsum(first, 0) - 1


def _inverse(group, perm):
    """Run ids in the input's order: group is in sorted order, perm[i] the input
    position of sorted element i (None: not sorted)."""
    if perm is None:
        return group
    return torch.empty_like(group).scatter_(0, perm, group)


def _unique(self, return_inverse, return_counts, sort):
    """(values, inverse, counts) of the runs of equal neighbours of the
    flattened tensor, sorted first when `sort`; the inverse and counts are
    empty unless asked for (as PyTorch returns them)."""
    flat = self.reshape(-1)
    n = flat.numel()
    dev = self.device
    if n == 0:
        inv = (
            torch.empty(self.shape, dtype=torch.long, device=dev)
            if return_inverse
            else _empty_long(dev)
        )
        return flat.clone(), inv, _empty_long(dev)
    s, perm = torch.sort(flat) if sort else (flat, None)
    first, group = _first_of_runs(s[1:] != s[:-1])
    values = torch.masked_select(s, first)
    inverse = _empty_long(dev)
    if return_inverse:
        inverse = _inverse(group, perm).reshape(self.shape)
    counts = _counts(first, n) if return_counts else _empty_long(dev)
    return values, inverse, counts


def _lexicographic_order(rows):
    """The permutation that sorts the rows of a (K, L) matrix lexicographically (first
    element most significant; ties keep their order): L stable sorts, last column first."""
    K, L = rows.shape
    perm = torch.arange(K, device=rows.device)
    keys = rows.to(torch.uint8) if rows.dtype == torch.bool else rows
    for j in range(L - 1, -1, -1):
        order = torch.sort(keys[:, j].index_select(0, perm), stable=True)[1]
        perm = perm.index_select(0, order)
    return perm


def _unique_slices(self, dim, sort):
    """(values, inverse, counts) of the slices of `self` along `dim` (unique_dim, and
    unique_consecutive / unique_dim_consecutive with a dim): inverse and counts are
    always computed, as PyTorch's kernels return them whatever was asked."""
    if self.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, self.dim())
    dev = self.device
    K = self.shape[d]
    if any(n == 0 for i, n in enumerate(self.shape) if i != d):
        raise RuntimeError(
            "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"
        )
    moved = self.movedim(d, 0)
    if K == 0:
        return self.clone(), _empty_long(dev), _empty_long(dev)
    rows = moved.reshape(K, -1)
    perm = _lexicographic_order(rows) if sort else None
    s = rows if perm is None else rows.index_select(0, perm)
    first, group = _first_of_runs((s[1:] != s[:-1]).any(1))
    kept = torch.nonzero(first).reshape(-1)
    values = s.index_select(0, kept).reshape(kept.numel(), *moved.shape[1:]).movedim(0, d)
    return values.contiguous(), _inverse(group, perm), _counts(first, K)


@kernel()
def unique2(
    self: torch.Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """_unique2(self, sorted, return_inverse, return_counts): the distinct values
    in ascending order (always sorted, as on CUDA), the position of each input
    element among them, and how often each occurs."""
    return _unique(self, return_inverse, return_counts, sort=True)


@kernel()
def unique(
    self: torch.Tensor, sorted: bool = True, return_inverse: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """_unique(self, sorted, return_inverse)."""
    values, inverse, _ = _unique(self, return_inverse, False, sort=True)
    return values, inverse


@kernel()
def unique_dim(
    self: torch.Tensor,
    dim: int,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """unique_dim(self, dim, sorted, return_inverse, return_counts): the distinct slices
    along dim, sorted (as on CUDA, whatever `sorted` says), the index of each input
    slice among them and how often each occurs."""
    return _unique_slices(self, dim, sort=True)


@kernel()
def unique_dim_consecutive(
    self: torch.Tensor,
    dim: int,
    return_inverse: bool = False,
    return_counts: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """unique_dim_consecutive(self, dim, return_inverse, return_counts): collapses runs
    of equal neighbouring slices along dim."""
    return _unique_slices(self, dim, sort=False)


@kernel()
def unique_consecutive(
    self: torch.Tensor,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """unique_consecutive(self, return_inverse, return_counts, dim): collapses
    runs of equal neighbours of the flattened tensor, or of slices along dim."""
    if dim is not None:
        return _unique_slices(self, dim, sort=False)
    return _unique(self, return_inverse, return_counts, sort=False)
