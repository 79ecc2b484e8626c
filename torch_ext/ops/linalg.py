"""Dense linear algebra through PyTorch's own linalg ops, which are device
generic and call four LAPACK-style DispatchStubs that we fill here:

  lu_factor_stub(LU, pivots, infos, compute_pivots)    LU with partial pivoting
  lu_solve_stub(LU, pivots, B, trans)                  B := op(A)^-1 B
  cholesky_stub(A, infos, upper)                       A := L (or U)
  triangular_solve_stub(A, B, left, upper, trans, unitriangular)

With them det, slogdet, inv, solve, lu_factor, lu_solve, cholesky,
solve_triangular and triangular_solve run on the device, with PyTorch's
checks, batching, broadcasting and autograd formulas; _cholesky_solve_helper
(cholesky_solve) is a Plain op over the triangular solve.

The factorisations are the textbook right-looking algorithms, one column per
step; each step is a few of our kernels over the whole batch, so the work per
launch grows with the batch and the matrix, and the number of launches with
the matrix size (n steps): meant for the small and medium matrices models use
(a blocked, tensor-core variant for large ones is future work). Everything is
computed in the input's own float dtype (float32/float64, as PyTorch's
kernels do).
"""

import torch

from .copy import copy_kernel
from ._declare import kernel


def _colmajor(t):
    """The matrix the stubs mean by t: LAPACK reads a matrix's memory in column
    major order, and PyTorch's callers rely on it (linalg.solve_triangular
    hands over a row-major A, flipping `upper` and `trans` to match), so a
    row-major t stands for its transpose."""
    if t.shape[-1] > 1 and t.shape[-2] > 1 and t.stride(-1) == 1 and t.stride(-2) != 1:
        return t.mT
    return t


def _batched(t):
    """A contiguous (batch, rows, cols) working copy of t."""
    return t.reshape(-1, t.shape[-2], t.shape[-1]).clone(memory_format=torch.contiguous_format)


@kernel()
def lu_factor(
    LU: torch.Tensor, pivots: torch.Tensor, infos: torch.Tensor, compute_pivots: bool
) -> None:
    """In place: LU := L\\U of P A = L U (unit L below the diagonal), pivots
    (1-based, int32) and infos (the first zero pivot, 1-based; 0 if none)."""
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    if LU.numel() == 0:
        if infos.numel():
            infos.zero_()
        if pivots.numel():
            copy_kernel(
                (pivots,),
                (torch.arange(1, k + 1, dtype=torch.int32, device=LU.device).expand(pivots.shape),),
            )
        return
    target = _colmajor(LU)
    m, n = target.shape[-2], target.shape[-1]
    w = _batched(target)
    B = w.shape[0]
    piv = torch.arange(1, k + 1, dtype=torch.int32, device=w.device).repeat(B, 1)
    info = torch.zeros(B, dtype=torch.int32, device=w.device)
    for j in range(k):
        if compute_pivots and j < m - 1:
            p = torch.argmax(w[:, j:, j].abs(), dim=1) + j  # (B,)
            piv[:, j] = (p + 1).to(torch.int32)
            rows = p.view(B, 1, 1).expand(B, 1, n)
            row_j = w[:, j : j + 1, :].clone()
            w[:, j : j + 1, :] = torch.gather(w, 1, rows)
            w.scatter_(1, rows, row_j)
        d = w[:, j, j]
        zero = d == 0
        info = torch.where((info == 0) & zero, torch.full_like(info, j + 1), info)
        if j + 1 < m:
            col = w[:, j + 1 :, j] / torch.where(zero, torch.ones_like(d), d).unsqueeze(1)
            w[:, j + 1 :, j] = col
            if j + 1 < n:
                w[:, j + 1 :, j + 1 :] -= col.unsqueeze(2) * w[:, j : j + 1, j + 1 :]
    copy_kernel((target,), (w.view(target.shape),))
    if pivots.numel():
        copy_kernel((pivots,), (piv.view(pivots.shape),))
    if infos.numel():
        copy_kernel((infos,), (info.view(infos.shape),))


def _tri_solve(A, X, lower, unit):
    """X := A^-1 X for triangular A (B, n, n), X (B, n, k), by substitution."""
    n = A.shape[-1]
    order = range(n) if lower else range(n - 1, -1, -1)
    for i in order:
        r = X[:, i : i + 1, :]
        if lower and i > 0:
            r = r - torch.matmul(A[:, i : i + 1, :i], X[:, :i, :])
        elif not lower and i < n - 1:
            r = r - torch.matmul(A[:, i : i + 1, i + 1 :], X[:, i + 1 :, :])
        if not unit:
            r = r / A[:, i : i + 1, i : i + 1]
        X[:, i : i + 1, :] = r
    return X


def _swap_rows(X, piv, order):
    """Applies the row interchanges of 1-based `piv` (B, k) to X (B, n, c)."""
    B, _, c = X.shape
    for i in order:
        p = (piv[:, i].to(torch.long) - 1).view(B, 1, 1).expand(B, 1, c)
        row_i = X[:, i : i + 1, :].clone()
        X[:, i : i + 1, :] = torch.gather(X, 1, p)
        X.scatter_(1, p, row_i)


@kernel()
def lu_solve(LU: torch.Tensor, pivots: torch.Tensor, B: torch.Tensor, trans: int) -> None:
    """In place: B := op(A)^-1 B with A = P L U from lu_factor; trans 0: A,
    1: A^T, 2: A^H (= A^T for real dtypes)."""
    if B.numel() == 0:
        return
    batch = B.shape[:-2]
    n = LU.shape[-1]
    lu = _colmajor(LU).expand(*batch, n, n).reshape(-1, n, n)
    piv = pivots.expand(*batch, pivots.shape[-1]).reshape(-1, pivots.shape[-1])
    X = _batched(B)
    k = piv.shape[-1]
    if trans == 0:
        _swap_rows(X, piv, range(k))
        _tri_solve(lu, X, lower=True, unit=True)
        _tri_solve(lu, X, lower=False, unit=False)
    else:
        lut = lu.transpose(1, 2)
        _tri_solve(lut, X, lower=True, unit=False)  # U^T
        _tri_solve(lut, X, lower=False, unit=True)  # L^T
        _swap_rows(X, piv, range(k - 1, -1, -1))
    copy_kernel((B,), (X.view(B.shape),))


@kernel()
def triangular_solve(
    A: torch.Tensor, B: torch.Tensor, left: bool, upper: bool, trans: int, unitriangular: bool
) -> None:
    """In place: B := op(A)^-1 B (left) or B op(A)^-1 (right), A triangular
    (as LAPACK reads its memory, see _colmajor)."""
    _solve_triangular(_colmajor(A), B, left, upper, trans, unitriangular)


def _solve_triangular(A, B, left, upper, trans, unitriangular):
    """triangular_solve on A as its logical (strided) matrix."""
    if B.numel() == 0:
        return
    batch = B.shape[:-2]
    a = A.expand(*batch, *A.shape[-2:]).reshape(-1, *A.shape[-2:])
    lower = not upper
    if trans:
        a, lower = a.transpose(1, 2), not lower
    X = _batched(B)
    if left:
        _tri_solve(a, X, lower, unitriangular)
    else:  # X A' = B  <=>  A'^T X^T = B^T
        Xt = X.transpose(1, 2).contiguous()
        _tri_solve(a.transpose(1, 2), Xt, not lower, unitriangular)
        X = Xt.transpose(1, 2)
    copy_kernel((B,), (X.reshape(B.shape),))


@kernel()
def cholesky(A: torch.Tensor, infos: torch.Tensor, upper: bool) -> None:
    """In place: A := L with A = L L^T (upper: U = L^T); infos: the order of
    the first non-positive leading minor (1-based), 0 if A is positive definite.
    Only the returned triangle is meaningful (the caller clears the other)."""
    n = A.shape[-1]
    if A.numel() == 0:
        if infos.numel():
            infos.zero_()
        return
    target = _colmajor(A)
    w = _batched(target)
    Bn = w.shape[0]
    L = torch.zeros_like(w)
    info = torch.zeros(Bn, dtype=torch.int32, device=w.device)
    for j in range(n):
        d = w[:, j, j]
        if j:
            d = d - (L[:, j, :j] * L[:, j, :j]).sum(-1)
        bad = ~(d > 0)  # also NaN
        info = torch.where((info == 0) & bad, torch.full_like(info, j + 1), info)
        ljj = torch.sqrt(torch.where(bad, torch.ones_like(d), d))
        L[:, j, j] = ljj
        if j + 1 < n:
            col = w[:, j + 1 :, j : j + 1]
            if j:
                col = col - torch.matmul(L[:, j + 1 :, :j], L[:, j, :j].unsqueeze(2))
            L[:, j + 1 :, j : j + 1] = col / ljj.view(Bn, 1, 1)
    out = L.transpose(1, 2) if upper else L
    copy_kernel((target,), (out.reshape(target.shape),))
    if infos.numel():
        copy_kernel((infos,), (info.view(infos.shape),))


@kernel()
def cholesky_solve_helper(self: torch.Tensor, A: torch.Tensor, upper: bool) -> torch.Tensor:
    """_cholesky_solve_helper(self, A, upper): A is the Cholesky factor (lower
    L, or upper U = L^T) of the matrix; returns (L L^T)^-1 self."""
    batch = torch.broadcast_shapes(self.shape[:-2], A.shape[:-2])
    X = self.expand(*batch, *self.shape[-2:]).clone(memory_format=torch.contiguous_format)
    L = A.transpose(-1, -2) if upper else A
    _solve_triangular(L, X, True, False, 0, False)
    _solve_triangular(L, X, True, False, 1, False)
    return X


def _check_cholesky_inverse(self):
    if self.dim() < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    if self.shape[-1] != self.shape[-2]:
        raise RuntimeError(
            f"cholesky_inverse: A must be batches of square matrices, but they are "
            f"{self.shape[-2]} by {self.shape[-1]} matrices"
        )


@kernel()
def cholesky_inverse(self: torch.Tensor, upper: bool = False) -> torch.Tensor:
    """cholesky_inverse(self, upper): (L L^T)^-1 from the factor L (or U = L^T): the
    identity solved through the two triangular systems, as cholesky_solve."""
    _check_cholesky_inverse(self)
    eye = torch.zeros(self.shape, dtype=self.dtype, device=self.device)
    eye.diagonal(dim1=-2, dim2=-1).fill_(1)
    return cholesky_solve_helper(eye, self, upper)


@kernel()
def cholesky_inverse_out(self: torch.Tensor, upper: bool, out: torch.Tensor) -> torch.Tensor:
    res = cholesky_inverse(self, upper)
    out.resize_(res.shape)
    copy_kernel((out,), (res,))
    return out
