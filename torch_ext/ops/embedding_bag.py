"""F.embedding_bag: sums, means or maxima of embedding rows over bags given by
offsets, per-sample weights and padding_idx, and its gradients -- built from
our kernels (index_select with bounds checks, index_add, scatter_reduce,
searchsorted). PyTorch's own are CPU/CUDA-specific: Plain ops.

Returns what PyTorch's autograd formula hands back to the backward:
(output, offset2bag, bag_size, max_indices), offset2bag always filled.
"""

import torch

from ._common import float_acc
from ._declare import kernel

SUM, MEAN, MAX = 0, 1, 2


def _bags(indices, offsets, include_last_offset):
    if indices.dim() != 1 or offsets.dim() != 1:
        raise ValueError(
            f"embedding_bag: expected 1-d indices and offsets, got {indices.dim()}-d "
            f"and {offsets.dim()}-d"
        )
    n = indices.numel()
    B = offsets.numel() - (1 if include_last_offset else 0)
    if B < 0:
        raise RuntimeError("embedding_bag: include_last_offset needs at least one offset")
    if offsets.numel() and int(offsets[0].item()) != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has "
            "to start from position 0. However, got " + str(int(offsets[0].item()))
        )
    pos = torch.arange(n, device=indices.device, dtype=offsets.dtype)
    starts = offsets[:B].contiguous()
    o2b = (torch.searchsorted(starts, pos, right=True) - 1).clamp_min(0) if B else pos * 0
    return B, o2b.to(indices.dtype)


@kernel()
def embedding_bag(
    weight: torch.Tensor,
    indices: torch.Tensor,
    offsets: torch.Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: torch.Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int = -1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """_embedding_bag / _embedding_bag_forward_only."""
    if mode not in (SUM, MEAN, MAX):
        raise RuntimeError(f"embedding_bag: unknown mode {mode}")
    if per_sample_weights is not None:
        if mode != SUM:
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. "
                "per_sample_weights is only supported for mode='sum'"
            )
        if per_sample_weights.shape != indices.shape:
            raise ValueError("embedding_bag: per_sample_weights must have the shape of indices")
    B, o2b = _bags(indices, offsets, include_last_offset)
    D = weight.shape[1]
    dev = weight.device
    rows = torch.index_select(weight, 0, indices)  # (n, D), out-of-range indices raise
    if weight.dtype in (torch.float16, torch.bfloat16):  # accumulate in float32, round once
        rows = rows.float()
    valid = (
        indices != padding_idx if padding_idx >= 0 else torch.ones_like(indices, dtype=torch.bool)
    )
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1).to(rows.dtype)
    counts = torch.zeros(B, dtype=indices.dtype, device=dev).index_add_(
        0, o2b, valid.to(indices.dtype)
    )
    o2b_long = o2b.long()
    if mode == MAX:
        r = torch.where(valid.unsqueeze(1), rows, torch.full_like(rows, float("-inf")))
        out = torch.full((B, D), float("-inf"), dtype=rows.dtype, device=dev)
        out = out.scatter_reduce(0, o2b_long.unsqueeze(1).expand_as(r), r, "amax")
        hit = valid.unsqueeze(1) & (r == out.index_select(0, o2b_long))
        cand = torch.where(
            hit, indices.unsqueeze(1).expand_as(r), torch.full_like(r, -1, dtype=indices.dtype)
        )
        max_indices = torch.full((B, D), -1, dtype=indices.dtype, device=dev)
        max_indices = max_indices.scatter_reduce(
            0, o2b_long.unsqueeze(1).expand_as(r), cand, "amax"
        )
        out = torch.where(counts.unsqueeze(1) > 0, out, torch.zeros_like(out))
    else:
        r = torch.where(valid.unsqueeze(1), rows, torch.zeros_like(rows))
        out = torch.zeros((B, D), dtype=rows.dtype, device=dev).index_add_(0, o2b_long, r)
        if mode == MEAN:
            out = out / counts.clamp_min(1).unsqueeze(1).to(out.dtype)
        max_indices = torch.zeros(B if mode == MEAN else 0, dtype=indices.dtype, device=dev)
    return out.to(weight.dtype), o2b, counts, max_indices


@kernel()
def embedding_bag_dense_backward(
    grad: torch.Tensor,
    indices: torch.Tensor,
    offset2bag: torch.Tensor,
    bag_size: torch.Tensor,
    maximum_indices: torch.Tensor,
    num_weights: int,
    scale_grad_by_freq: bool,
    mode: int,
    per_sample_weights: torch.Tensor | None,
    padding_idx: int = -1,
) -> torch.Tensor:
    D = grad.shape[1]
    dev = grad.device
    acc = float_acc(grad.dtype)
    gw = torch.zeros((num_weights, D), dtype=acc, device=dev)
    valid = (
        indices != padding_idx if padding_idx >= 0 else torch.ones_like(indices, dtype=torch.bool)
    )
    if mode == MAX:
        mi = maximum_indices.reshape(-1).long()
        keep = mi >= 0
        d = torch.arange(D, device=dev).repeat(maximum_indices.shape[0])
        gw.view(-1).index_add_(
            0,
            torch.masked_select(mi * D + d, keep),
            torch.masked_select(grad.reshape(-1).to(acc), keep),
        )
    else:
        o2b = offset2bag.long()
        g = grad.to(acc).index_select(0, o2b)
        if mode == MEAN:
            g = g / bag_size.index_select(0, o2b).clamp_min(1).to(acc).unsqueeze(1)
        if per_sample_weights is not None:
            g = g * per_sample_weights.to(acc).unsqueeze(1)
        if scale_grad_by_freq:
            freq = torch.bincount(indices.long(), minlength=num_weights).index_select(
                0, indices.long()
            )
            g = g / freq.to(acc).unsqueeze(1)
        g = torch.where(valid.unsqueeze(1), g, torch.zeros_like(g))
        gw.index_add_(0, indices.long(), g)
    return gw.to(grad.dtype)


@kernel()
def embedding_bag_per_sample_weights_backward(
    grad: torch.Tensor,
    weight: torch.Tensor,
    indices: torch.Tensor,
    offsets: torch.Tensor,
    offset2bag: torch.Tensor,
    mode: int,
    padding_idx: int = -1,
) -> torch.Tensor:
    if mode != SUM:
        raise NotImplementedError(
            "embedding_bag_backward: per_sample_weights only supported for mode='sum'"
        )
    g = grad.index_select(0, offset2bag.long())
    r = (g * torch.index_select(weight, 0, indices)).sum(1)
    if padding_idx >= 0:
        r = torch.where(indices != padding_idx, r, torch.zeros_like(r))
    return r
