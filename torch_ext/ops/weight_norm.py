"""Weight normalisation (torch.nn.utils.weight_norm and parametrizations.weight_norm):
w = g * v / ||v||, the norm over every dimension but `dim` (0 or the last: the two
torch's _weight_norm takes this fused op for; other dims take its composite). Composed
of our reductions and pointwise kernels (the weights are small: a few launches, no
Python kernel of its own). The norms are float32 for fp16/bf16 weights."""

import torch

from ._common import stat_dtype
from ._declare import kernel


def _dims(v, dim):
    if v.dim() and not (dim == 0 or dim == v.dim() - 1):
        raise RuntimeError(
            f"torch_ext: _weight_norm_interface takes dim 0 or {v.dim() - 1} (the last) for a "
            f"{v.dim()}-d weight, got {dim}"
        )
    return [d for d in range(v.dim()) if d != dim]


@kernel()
def weight_norm_interface(
    v: torch.Tensor, g: torch.Tensor, dim: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    dims = _dims(v, dim)
    norms = torch.linalg.vector_norm(v, 2, dim=dims, keepdim=True, dtype=stat_dtype(v.dtype))
    w = (v * (g / norms)).to(v.dtype)
    return w, norms


@kernel()
def weight_norm_interface_backward(
    grad_w: torch.Tensor,
    saved_v: torch.Tensor,
    saved_g: torch.Tensor,
    saved_norms: torch.Tensor,
    dim: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """d/dg = sum(grad_w * v) / ||v||; d/dv = g / ||v|| * (grad_w - v * sum(grad_w * v) /
    ||v||**2), the sums over the norm's dimensions."""
    dims = _dims(saved_v, dim)
    acc = saved_norms.dtype
    s = (grad_w * saved_v).sum(dims, keepdim=True, dtype=acc)
    grad_g = (s / saved_norms).to(saved_g.dtype)
    scale = saved_g / saved_norms
    grad_v = (scale * (grad_w - saved_v * (s / (saved_norms * saved_norms)))).to(saved_v.dtype)
    return grad_v, grad_g
