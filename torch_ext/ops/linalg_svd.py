"""Singular value decomposition: the LAPACK-style stub PyTorch's device-generic
linalg.svd / svdvals (and torch.svd, pinv, matrix_rank, the nuclear and 2-norms) call,
by one-sided (Hestenes) Jacobi:

  svd_stub(A, full_matrices, compute_uv, driver, U, S, Vh, info)
      A read, not written; S := the singular values, descending; U, Vh := the singular
      vectors (U (m x m or m x k), Vh (n x n or k x n), k = min(m, n)) where
      compute_uv; info := 0, or 1 where the sweeps did not converge

X = A (or A^T where A is wide, so that X is M x N with M >= N) is turned by plane
rotations of its column pairs until its columns are orthogonal: X J_1 J_2 ... = U S,
V = J_1 J_2 .... The rotations of a round are those of the symmetric eigenproblem on
X^T X's 2 x 2 blocks (linalg_eigh.rotation), in the same round-robin order, a round
one batched product each for X and V. Sweeps stop once every column pair's cosine is
below M * eps (one host read a sweep). Where U needs more columns than the nonzero
singular values give (full_matrices, a rank-deficient A), they come from our QR of
[U, I]: an orthonormal completion, U's own columns kept. Singular vectors are unique
up to the sign of each (u, v) pair; float32 and float64, as CUDA.
"""

import torch

from .copy import copy_kernel
from ._declare import kernel
from .linalg_eigh import rotation, sweep


def _cosines(x):
    """Per matrix: the largest |x_p . x_q| / (|x_p| |x_q|) over column pairs."""
    g = torch.matmul(x.mT, x)
    d = torch.diagonal(g, dim1=-2, dim2=-1)
    scale = torch.sqrt(d.unsqueeze(2) * d.unsqueeze(1))
    cos = torch.where(scale > 0, g.abs() / torch.where(scale > 0, scale, 1), 0)
    cos = cos - torch.diag_embed(torch.diagonal(cos, dim1=-2, dim2=-1))
    return cos.amax(dim=(-2, -1))


def _complete(u, cols):
    """u (B, M, N) with unit columns where sigma > 0: the first `cols` columns of an
    orthonormal basis that keeps those columns (the others made up by QR)."""
    B, M, N = u.shape
    eye = torch.eye(M, dtype=u.dtype, device=u.device).expand(B, M, M)
    q, r = torch.linalg.qr(torch.cat([u, eye], dim=-1), mode="complete")
    diag = torch.diagonal(r, dim1=-2, dim2=-1)[:, :N]
    sign = torch.where(diag < 0, -1.0, 1.0).to(u.dtype)
    keep = torch.cat([sign, torch.ones(B, M - N, dtype=u.dtype, device=u.device)], dim=1)
    return (q * keep.unsqueeze(1))[:, :, :cols]


@kernel()
def svd(
    A: torch.Tensor,
    full_matrices: bool,
    compute_uv: bool,
    driver: str | None,
    U: torch.Tensor,
    S: torch.Tensor,
    Vh: torch.Tensor,
    info: torch.Tensor,
) -> None:
    """U, S, Vh := the SVD of A (module doc); info := 0 or 1 per matrix."""
    m, n = A.shape[-2], A.shape[-1]
    if A.numel() == 0:
        return  # PyTorch's impl fills U and Vh itself
    x = A.reshape(-1, m, n)
    wide = m < n
    x = (x.mT if wide else x).clone(memory_format=torch.contiguous_format)  # a working copy
    B, M, N = x.shape
    eye = torch.eye(N, dtype=x.dtype, device=x.device).expand(B, N, N).contiguous()
    v = eye.clone()
    tol = M * torch.finfo(x.dtype).eps

    def turn(P, Q):
        nonlocal x, v
        xp, xq = x[:, :, P], x[:, :, Q]
        J = rotation((xp * xp).sum(1), (xq * xq).sum(1), (xp * xq).sum(1), P, Q, eye)
        x = torch.matmul(x, J)
        if compute_uv:
            v = torch.matmul(v, J)

    done = sweep(N, eye, lambda: _cosines(x) <= tol, turn)
    sigma, order = torch.sort(torch.linalg.vector_norm(x, dim=1), dim=-1, descending=True)
    copy_kernel((S,), (sigma.view(S.shape),))
    if info.numel():
        copy_kernel((info,), ((~done).to(info.dtype).view(info.shape),))
    if not compute_uv:
        return
    x = torch.gather(x, 2, order.unsqueeze(1).expand(B, M, N))
    v = torch.gather(v, 2, order.unsqueeze(1).expand(B, N, N))
    nonzero = sigma > 0
    u = x / torch.where(nonzero, sigma, 1).unsqueeze(1)
    cols = M if full_matrices else N  # of u: U's (A tall), or Vh's rows (A wide)
    if cols > N or not bool(nonzero.all()):  # columns beyond the nonzero values' own
        u = _complete(u, cols)
    if wide:  # A^T = u S v^T, so A = v S u^T
        copy_kernel((U,), (v.view(U.shape),))
        copy_kernel((Vh,), (u.mT.reshape(Vh.shape),))
    else:
        copy_kernel((U,), (u.reshape(U.shape),))
        copy_kernel((Vh,), (v.mT.reshape(Vh.shape),))
