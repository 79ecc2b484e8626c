"""Pairwise distances (torch.cdist, F.pdist) and their gradients, built from
our kernels: p = 2 through a matrix product (|x|^2 + |y|^2 - 2 x.y, as
PyTorch's mm modes), other p through the broadcast difference.

PyTorch's own _cdist_forward / _pdist_forward refuse devices other than
CPU/CUDA, so these are Plain ops (convention 3).
"""

import torch

from ._declare import kernel


def _check_p(p, name):
    if p < 0:
        raise RuntimeError(f"{name} only supports non-negative p values")


def _norm_last(diff, p):
    """The p-norm over the last dim (p may be 0 or inf)."""
    a = diff.abs()
    if p == 0:
        return (a != 0).sum(-1).to(diff.dtype)
    if p == float("inf"):
        return a.amax(-1) if a.shape[-1] else a.sum(-1)
    if p == 1:
        return a.sum(-1)
    if p == 2:
        return (a * a).sum(-1).sqrt()
    return a.pow(p).sum(-1).pow(1.0 / p)


def _use_mm(p, compute_mode, r1, r2):
    if p != 2:
        return False
    if compute_mode is None or compute_mode == 0:  # use_mm_for_euclid_dist_if_necessary
        return r1 > 25 or r2 > 25
    return compute_mode == 1  # use_mm_for_euclid_dist; 2: donot_use_mm_for_euclid_dist


def _euclid_mm(x1, x2):
    n1 = (x1 * x1).sum(-1, keepdim=True)
    n2 = (x2 * x2).sum(-1, keepdim=True)
    d = n1 - 2 * torch.matmul(x1, x2.transpose(-1, -2)) + n2.transpose(-1, -2)
    return d.clamp_min(0).sqrt()


@kernel()
def cdist_forward(
    x1: torch.Tensor, x2: torch.Tensor, p: float, compute_mode: int | None = None
) -> torch.Tensor:
    """_cdist_forward(x1, x2, p, compute_mode): (.., R1, M) x (.., R2, M) -> (.., R1, R2)."""
    _check_p(p, "cdist")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if not x1.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}")
    batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    a = x1.expand(*batch, *x1.shape[-2:])
    b = x2.expand(*batch, *x2.shape[-2:])
    r1, r2 = a.shape[-2], b.shape[-2]
    if r1 == 0 or r2 == 0:
        return torch.empty(*batch, r1, r2, dtype=x1.dtype, device=x1.device)
    if a.shape[-1] == 0:
        return torch.zeros(*batch, r1, r2, dtype=x1.dtype, device=x1.device)
    if _use_mm(p, compute_mode, r1, r2):
        return _euclid_mm(a, b)
    return _norm_last(a.unsqueeze(-2) - b.unsqueeze(-3), p)


def _dist_grad(diff, dist, grad, p):
    """d dist / d x1 for diff = x1 - x2 (.., M), dist = |diff|_p (..)."""
    if p == 0:
        return torch.zeros_like(diff)
    d = dist.unsqueeze(-1)
    g = grad.unsqueeze(-1)
    if p == 1:
        return g * diff.sign()
    if p == 2:
        return torch.where(d == 0, torch.zeros_like(diff), g * diff / d)
    if p == float("inf"):
        hit = diff.abs() == d
        return torch.where(hit & (d != 0), g * diff.sign(), torch.zeros_like(diff))
    if p < 2:
        r = diff.sign() * diff.abs().pow(p - 1) / d.pow(p - 1)
        r = torch.where((diff == 0) | (d == 0), torch.zeros_like(diff), r)
    else:
        r = diff * diff.abs().pow(p - 2) / d.pow(p - 1)
        r = torch.where(d == 0, torch.zeros_like(diff), r)
    return g * r


@kernel()
def cdist_backward(
    grad: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor, p: float, cdist: torch.Tensor
) -> torch.Tensor:
    """_cdist_backward(grad, x1, x2, p, cdist): the gradient for x1 (autograd
    swaps the arguments for x2)."""
    if x1.shape[-2] == 0 or x2.shape[-2] == 0 or x1.shape[-1] == 0:
        return torch.zeros_like(x1)
    batch = cdist.shape[:-2]
    a = x1.expand(*batch, *x1.shape[-2:])
    b = x2.expand(*batch, *x2.shape[-2:])
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)  # (.., R1, R2, M)
    g = _dist_grad(diff, cdist, grad, p).sum(-2)
    while g.dim() > x1.dim():
        g = g.sum(0)
    for i, s in enumerate(x1.shape[:-2]):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


def _pairs(n, device):
    return torch.triu_indices(n, n, 1, device=device)


@kernel()
def pdist_forward(self: torch.Tensor, p: float = 2) -> torch.Tensor:
    """_pdist_forward(self, p): distances between the rows i < j of an (N, M) matrix."""
    _check_p(p, "pdist")
    if self.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {self.dim()}D")
    n = self.shape[0]
    if n < 2:
        return torch.empty(0, dtype=self.dtype, device=self.device)
    i, j = _pairs(n, self.device)
    return _norm_last(self[i] - self[j], p)


@kernel()
def pdist_backward(
    grad: torch.Tensor, self: torch.Tensor, p: float, pdist: torch.Tensor
) -> torch.Tensor:
    n = self.shape[0]
    out = torch.zeros_like(self)
    if n < 2 or self.shape[1] == 0:
        return out
    i, j = _pairs(n, self.device)
    g = _dist_grad(self[i] - self[j], pdist, grad, p)
    out.index_add_(0, i, g)
    out.index_add_(0, j, -g)
    return out
