"""linalg_matrix_exp(self): the matrix exponential, batched, by scaling and squaring.

PyTorch's generic implementation picks a Taylor degree per matrix from its 1-norm and
moves the norms to the CPU only for CUDA tensors (so it mixes devices on ours). Here:
each matrix is scaled by 2^-s so that its 1-norm is at most PyTorch's bound for its
degree-18 approximant (3.01 in float32, 1.09 in float64: truncation below the dtype's
rounding), the degree-18 Taylor polynomial is evaluated by Horner's rule (our matmul),
and the result squared s times (each matrix its own s, by a select). float16/bfloat16
are computed in float32. The gradient is PyTorch's (matrix_exp_backward, through this).
"""

import torch

from ._declare import kernel

_THETA18 = {torch.float32: 3.010066362817634, torch.float64: 1.090863719290036}
_DEGREE = 18


@kernel()
def linalg_matrix_exp(self: torch.Tensor) -> torch.Tensor:
    if self.dim() < 2 or self.shape[-1] != self.shape[-2]:
        raise RuntimeError(
            "linalg.matrix_exp: A must be batches of square matrices, but they are "
            f"{self.shape[-2] if self.dim() >= 2 else 1} by {self.shape[-1] if self.dim() else 1} matrices"  # noqa: E501
        )
    if not (self.dtype.is_floating_point or self.is_complex()):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point tensor, got {self.dtype}")
    if self.numel() == 0:
        return torch.empty(self.shape, dtype=self.dtype, device=self.device)
    n = self.shape[-1]
    if n == 1:
        return self.exp()
    comp = torch.float64 if self.dtype == torch.float64 else torch.float32
    x = self.to(comp)
    norm = x.abs().sum(-2).amax(-1)
    s = torch.ceil(torch.log2(norm / _THETA18[comp])).clamp_min(0)
    s = torch.where(torch.isfinite(s), s, torch.zeros_like(s))
    x = x / torch.exp2(s)[..., None, None]
    eye = torch.eye(n, dtype=comp, device=self.device).expand(x.shape)
    e = eye
    for k in range(_DEGREE, 0, -1):
        e = eye + torch.matmul(x, e) / k
    steps = int(s.max().item())
    for i in range(steps):
        e = torch.where((s > i)[..., None, None], torch.matmul(e, e), e)
    return e.to(self.dtype)
