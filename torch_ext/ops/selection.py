"""Selection, counting and searching: median, nanmedian, kthvalue, mode,
cummax/cummin, logcumsumexp, searchsorted/bucketize, bincount, histc, unique,
take, index_fill, masked_scatter, count_nonzero, trace, equal, aminmax, isin,
linalg_cross.

Order statistics come from our sort (NaN sorts last, as in PyTorch), picked
per row on the device (no host round trip for the position); the scans are one
Triton kernel over (A, R, B) with a carry between blocks of R, like cumsum;
the searches are a branch-free binary search, one lane per value.
"""

import torch

from .copy import copy_kernel
from ._declare import kernel
from ._common import check_out_overlap, wrap_dim, write_result
from .search import _search


def _reduced_shape(shape, d, keepdim):
    shape = list(shape)
    if not shape:
        return []
    if keepdim:
        shape[d] = 1
    else:
        del shape[d]
    return shape


# -- order statistics --------------------------------------------------------


def _pick(self, dim, keepdim, values, indices, position, name):
    """values/indices[...] = the element at sorted position `position(n, nan_count)`
    along dim (a (.., 1, ..) int64 tensor of positions)."""
    if self.dim() == 0:
        wrap_dim(dim, 0)
        write_result(values, self)
        write_result(indices, torch.zeros([], dtype=torch.long, device=self.device))
        return values, indices
    d = wrap_dim(dim, self.dim())
    n = self.shape[d]
    if n == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    s, si = torch.sort(self, dim=d)
    nan_count = None
    if self.dtype.is_floating_point:
        nan_count = torch.isnan(self).sum(d, keepdim=True)
    k = position(n, nan_count, s, d)
    v = torch.gather(s, d, k)
    i = torch.gather(si, d, k)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    write_result(values, v)
    write_result(indices, i)
    return values, indices


def _const_position(self, d, k):
    shape = list(self.shape)
    shape[d] = 1
    return torch.full(shape, k, dtype=torch.long, device=self.device)


def _median_position(n, nan_count, s, d):
    k = _const_position(s, d, (n - 1) // 2)
    if nan_count is not None:  # any NaN: the result is NaN (the last sorted element)
        k = torch.where(nan_count > 0, torch.full_like(k, n - 1), k)
    return k


def _nanmedian_position(n, nan_count, s, d):
    if nan_count is None:
        return _median_position(n, None, s, d)
    return torch.clamp_min(torch.div(n - nan_count - 1, 2, rounding_mode="floor"), 0)


@kernel("median_dim")
def median_dim_values(
    self: torch.Tensor, dim: int, keepdim: bool, values: torch.Tensor, indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """median.dim_values(self, dim, keepdim, values, indices)."""
    return _pick(self, dim, keepdim, values, indices, _median_position, "median")


@kernel("nanmedian_dim")
def nanmedian_dim_values(
    self: torch.Tensor, dim: int, keepdim: bool, values: torch.Tensor, indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return _pick(self, dim, keepdim, values, indices, _nanmedian_position, "nanmedian")


def _median_all(self, position, name):
    if self.numel() == 0:
        return torch.full([], float("nan"), dtype=self.dtype, device=self.device)
    values = torch.empty([], dtype=self.dtype, device=self.device)
    indices = torch.empty([], dtype=torch.long, device=self.device)
    _pick(self.reshape(-1), 0, False, values, indices, position, name)
    return values


@kernel("median_all")
def median(self: torch.Tensor) -> torch.Tensor:
    """median(self) -> Tensor: the lower median of all elements, NaN if any is."""
    return _median_all(self, _median_position, "median")


@kernel("nanmedian_all")
def nanmedian(self: torch.Tensor) -> torch.Tensor:
    return _median_all(self, _nanmedian_position, "nanmedian")


@kernel("kthvalue")
def kthvalue_values(
    self: torch.Tensor, k: int, dim: int, keepdim: bool, values: torch.Tensor, indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """kthvalue.values(self, k, dim, keepdim, values, indices): k-th smallest (1-based)."""
    check_out_overlap(values, self)
    check_out_overlap(indices, self)
    n = self.shape[wrap_dim(dim, self.dim())] if self.dim() else 1
    if not 1 <= k <= n:
        raise RuntimeError(
            f"kthvalue(): selected number k out of range for dimension {dim}: k = {k}, size = {n}"
        )
    return _pick(
        self,
        dim,
        keepdim,
        values,
        indices,
        lambda n, nan_count, s, d: _const_position(s, d, k - 1),
        "kthvalue",
    )


@kernel()
def mode_values(
    self: torch.Tensor, dim: int, keepdim: bool, values: torch.Tensor, indices: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """mode.values(self, dim, keepdim, values, indices): the most frequent value
    along dim (the smallest of equally frequent ones) and an index of it."""
    d = wrap_dim(dim, self.dim())
    if self.dim() and self.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    shape = _reduced_shape(self.shape, d, keepdim)
    if self.dim() == 0:
        write_result(values, self)
        write_result(indices, torch.zeros([], dtype=torch.long, device=self.device))
        return values, indices
    n = self.shape[d]
    s, si = torch.sort(self.movedim(d, -1).contiguous(), dim=-1)
    pos = torch.arange(n, device=self.device).expand_as(s)
    first = torch.ones_like(s, dtype=torch.bool)
    if n > 1:
        first[..., 1:] = s[..., 1:] != s[..., :-1]
    # Length of the run of equal values ending at each position; the first
    # longest run ends at its argmax (argmax keeps the first of equal maxima).
    start = torch.cummax(torch.where(first, pos, torch.zeros_like(pos)), -1).values
    end = torch.argmax(pos - start, -1, keepdim=True)
    v = torch.gather(s, -1, end).squeeze(-1)
    i = torch.gather(si, -1, end).squeeze(-1)
    write_result(values, v.reshape(shape))
    write_result(indices, i.reshape(shape))
    return values, indices


@kernel()
def mode(
    self: torch.Tensor, dim: int = -1, keepdim: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    values = torch.empty(0, dtype=self.dtype, device=self.device)
    indices = torch.empty(0, dtype=torch.long, device=self.device)
    return mode_values(self, dim, keepdim, values, indices)


# -- small reductions built from ours ----------------------------------------


@kernel()
def count_nonzero(self: torch.Tensor, dim: list[int]) -> torch.Tensor:
    """count_nonzero.dim_IntList(self, dim[])."""
    return torch.sum(self != 0, dim=list(dim))


@kernel()
def trace(self: torch.Tensor) -> torch.Tensor:
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    return torch.sum(torch.diagonal(self))


@kernel()
def equal(self: torch.Tensor, other: torch.Tensor) -> bool:
    """equal(self, other) -> bool: same shape and all elements equal."""
    if self.device != other.device:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two "
            f"devices, {self.device} and {other.device}!"
        )
    if list(self.shape) != list(other.shape):
        return False
    return bool(torch.all(self == other).item())


@kernel()
def aminmax_all(self: torch.Tensor, min: torch.Tensor, max: torch.Tensor) -> None:
    """aminmax_allreduce_stub(self, min, max)."""
    copy_kernel((min,), (torch.amin(self),))
    copy_kernel((max,), (torch.amax(self),))


@kernel()
def aminmax_dim(
    self: torch.Tensor, dim: int, keepdim: bool, min: torch.Tensor, max: torch.Tensor
) -> None:
    """aminmax_stub(self, dim, keepdim, min, max)."""
    copy_kernel((min,), (torch.amin(self, dim, keepdim),))
    copy_kernel((max,), (torch.amax(self, dim, keepdim),))


@kernel("isin")
def isin_out(
    elements: torch.Tensor,
    test_elements: torch.Tensor,
    assume_unique: bool,
    invert: bool,
    out: torch.Tensor,
) -> None:
    """isin.Tensor_Tensor_out impl: a broadcast comparison for few test elements,
    otherwise a binary search in the sorted test elements."""
    common = torch.result_type(elements, test_elements)
    e = elements.reshape(-1).to(common)
    t = test_elements.reshape(-1).to(common)
    if t.numel() == 0 or e.numel() == 0:
        found = torch.zeros(e.shape, dtype=torch.bool, device=e.device)
    elif e.numel() * t.numel() <= (1 << 20):
        found = torch.any(e[:, None] == t[None, :], dim=1)
    else:
        st = torch.sort(t).values
        pos = torch.clamp_max(_search(st, e, False, False, None, None, "isin"), st.numel() - 1)
        found = torch.index_select(st, 0, pos) == e
    if invert:
        found = torch.logical_not(found)
    write_result(out, found.reshape(elements.shape))


@kernel()
def cross(result: torch.Tensor, a: torch.Tensor, b: torch.Tensor, dim: int) -> None:
    """cross_stub(result, a, b, dim): a and b broadcast to result's shape."""
    if a.dtype in (torch.float16, torch.bfloat16):  # one rounding, from float32
        a, b = a.float(), b.float()
    a0, a1, a2 = (a.select(dim, i) for i in range(3))
    b0, b1, b2 = (b.select(dim, i) for i in range(3))
    for i, v in enumerate((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)):
        copy_kernel((result.select(dim, i),), (v,))
