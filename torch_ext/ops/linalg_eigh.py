"""Symmetric eigendecomposition: the LAPACK-style stub PyTorch's device-generic
linalg.eigh / eigvalsh calls, by the parallel (round-robin) Jacobi method:

  linalg_eigh_stub(values, vectors, infos, upper, compute_v)
      vectors holds A (the `upper` or lower triangle referenced); values := its
      eigenvalues in ascending order, vectors := their orthonormal eigenvectors (as
      columns, where compute_v), infos := 0, or 1 where the sweeps did not converge

A sweep pairs every index with every other once, in n - 1 rounds (odd n: one index
sits out each round) of n / 2 disjoint rotations; a round is one rotation matrix J
applied to the whole batch, A := J^T A J and V := V J (two and one of our batched
products). Each rotation zeroes its pair's off-diagonal entry (Golub and Van Loan's
sym.schur2, with hypot against overflow). Sweeps stop once every matrix's
off-diagonal part is below n * eps of its norm (one host read a sweep), at most
MAX_SWEEPS; Jacobi converges quadratically (float64: 6-10 sweeps), and its
eigenvalues carry high relative accuracy. Meant for the small and medium matrices
models use (n rounds of launches a sweep); float32 and float64, as CUDA.
"""

import torch

from .copy import copy_kernel
from ._declare import kernel
from .linalg import _batched, _colmajor

MAX_SWEEPS = 40


def rounds(n):
    """The sweep's rounds: (P, Q) index lists of disjoint pairs covering each pair once."""
    m = n + (n % 2)
    ring = list(range(m))
    out = []
    for _ in range(m - 1):
        pairs = [(ring[i], ring[m - 1 - i]) for i in range(m // 2)]
        pairs = [(min(p, q), max(p, q)) for p, q in pairs if p < n and q < n]
        out.append(([p for p, _ in pairs], [q for _, q in pairs]))
        ring = [ring[0], ring[-1], *ring[1:-1]]  # the first fixed, the others turn
    return out


def rotation(app, aqq, apq, P, Q, eye):
    """J (B, n, n): for each pair (p, q) of the round the rotation that zeroes the
    off-diagonal entry of the symmetric 2 x 2 [[app, apq], [apq, aqq]] (each (B, pairs))
    through J^T (.) J; no rotation where apq is 0."""
    zero = apq == 0
    tau = (aqq - app) / (2 * torch.where(zero, torch.ones_like(apq), apq))
    one = torch.ones_like(tau)
    t = torch.where(tau >= 0, one, -one) / (tau.abs() + torch.hypot(one, tau))
    c = 1 / torch.hypot(one, t)
    s = torch.where(zero, torch.zeros_like(t), t * c)
    c = torch.where(zero, one, c)
    J = eye.clone()
    J[:, P, P] = c
    J[:, Q, Q] = c
    J[:, P, Q] = s
    J[:, Q, P] = -s
    return J


def sweep(n, eye, converged, turn):
    """The Jacobi sweeps over matrices of order n: `converged()` (per matrix, bool)
    before each sweep, stopping once all are; `turn(P, Q)` applies a round. Returns
    the last `converged()` (all True for n = 1, which needs no rotation)."""
    if n < 2:
        return torch.ones(eye.shape[0], dtype=torch.bool, device=eye.device)
    pairings = rounds(n)
    for _ in range(MAX_SWEEPS):
        done = converged()
        if bool(done.all()):
            return done
        for P, Q in pairings:
            turn(P, Q)
    return converged()


def _off(a):
    """Per matrix: the off-diagonal part's Frobenius norm and the whole norm."""
    diag = torch.diag_embed(torch.diagonal(a, dim1=-2, dim2=-1))
    return torch.linalg.matrix_norm(a - diag), torch.linalg.matrix_norm(a)


@kernel()
def linalg_eigh(
    values: torch.Tensor,
    vectors: torch.Tensor,
    infos: torch.Tensor,
    upper: bool,
    compute_v: bool,
) -> None:
    """values := the eigenvalues of the symmetric matrices in `vectors` (module doc),
    ascending; vectors := their eigenvectors where compute_v; infos := 0 or 1."""
    if vectors.numel() == 0:
        return
    target = _colmajor(vectors)
    w = _batched(target)
    B, n, _ = w.shape
    half = torch.triu(w) if upper else torch.tril(w)
    a = half + half.mT - torch.diag_embed(torch.diagonal(half, dim1=-2, dim2=-1))
    eye = torch.eye(n, dtype=a.dtype, device=a.device).expand(B, n, n).contiguous()
    v = eye.clone()
    tol = n * torch.finfo(a.dtype).eps

    def converged():
        off, whole = _off(a)
        return off <= tol * whole

    def turn(P, Q):
        nonlocal a, v
        d = torch.diagonal(a, dim1=-2, dim2=-1)
        J = rotation(d[:, P], d[:, Q], a[:, P, Q], P, Q, eye)
        a = torch.matmul(torch.matmul(J.mT, a), J)
        if compute_v:
            v = torch.matmul(v, J)

    done = sweep(n, eye, converged, turn)
    vals, order = torch.sort(torch.diagonal(a, dim1=-2, dim2=-1), dim=-1)
    copy_kernel((values,), (vals.view(values.shape),))
    if compute_v:
        v = torch.gather(v, 2, order.unsqueeze(1).expand(B, n, n))
        copy_kernel((target,), (v.view(target.shape),))
    if infos.numel():
        bad = (~done).to(infos.dtype)
        copy_kernel((infos,), (bad.view(infos.shape),))
