"""QR by Householder reflections: the two LAPACK-style stubs PyTorch's device-generic
linalg.qr calls (torch.qr too), in the manner of ops/linalg.py:

  geqrf_stub(A, tau)       A := R above the diagonal, the reflectors' vectors below it
                           (their leading 1 implied); tau their scales
  orgqr_stub(Q, tau)       Q := the first Q.shape[-1] columns of H_0 H_1 ... H_{k-1},
                           from the vectors Q holds below its diagonal (returns Q)

H_j = I - tau_j v_j v_j^T, v_j = (0, ..., 0, 1, A[j+1:, j]). The reflector of a column
follows LAPACK's dlarfg: beta = -sign(alpha) * ||(alpha, x)||, tau = (beta - alpha) / beta,
v = x / (alpha - beta); a column already zero below its diagonal gets tau = 0 (H = I),
so R's diagonal keeps LAPACK's signs and Q matches LAPACK's Q, not only up to signs.
(dlarfg's rescaling of columns whose norm underflows is not done: such a column's
reflector loses precision.)

One column per step over the whole batch, a few of our kernels each (a right-looking
unblocked algorithm, as lu_factor): meant for the small and medium matrices models
use. The manifest lets float32 and float64 through, as CUDA's kernels.
"""

import torch

from ._common import scalar_name
from .copy import copy_kernel
from ._declare import kernel
from .linalg import _batched, _colmajor


def _reflector(w, j):
    """The reflector of column j of w (B, m, n), below row j: its tau (B,), with the
    column made (beta, v) in place."""
    m = w.shape[1]
    alpha = w[:, j, j].clone()
    if j + 1 < m:
        below = w[:, j + 1 :, j]
        xnorm = torch.linalg.vector_norm(below, dim=1)
    else:
        xnorm = torch.zeros_like(alpha)
    whole = xnorm == 0  # nothing below the diagonal to annihilate: H = I
    beta = -torch.copysign(torch.hypot(alpha, xnorm), alpha)
    safe = torch.where(whole, torch.ones_like(beta), beta)
    tau = torch.where(whole, torch.zeros_like(beta), (beta - alpha) / safe)
    if j + 1 < m:
        scale = torch.where(whole, torch.ones_like(beta), 1.0 / (alpha - safe))
        w[:, j + 1 :, j] = below * scale.unsqueeze(1)
    w[:, j, j] = torch.where(whole, alpha, beta)
    return tau


def _apply(w, j, tau, block):
    """block (B, m - j, c) := H_j block, H_j's vector below row j of w's column j."""
    B = w.shape[0]
    v = torch.cat([torch.ones(B, 1, dtype=w.dtype, device=w.device), w[:, j + 1 :, j]], dim=1)
    vt_block = torch.matmul(v.unsqueeze(1), block)  # (B, 1, c)
    block -= (tau.view(B, 1, 1) * v.unsqueeze(2)) * vt_block


def householder(w):
    """In place on w (B, m, n), contiguous: R and the reflectors (module doc); returns
    their taus (B, min(m, n))."""
    B, m, n = w.shape
    k = min(m, n)
    taus = torch.empty(B, k, dtype=w.dtype, device=w.device)
    for j in range(k):
        t = _reflector(w, j)
        taus[:, j] = t
        if j + 1 < n:
            _apply(w, j, t, w[:, j:, j + 1 :])
    return taus


def apply_q(w, taus, c, transpose):
    """In place: c (B, m, r) := Q c, or Q^T c, for Q = H_0 ... H_{k-1} of the
    reflectors in w's columns (B, m, >= k) and taus (B, k)."""
    k = taus.shape[1]
    for j in range(k) if transpose else reversed(range(k)):
        _apply(w, j, taus[:, j], c[:, j:, :])


@kernel()
def geqrf(input: torch.Tensor, tau: torch.Tensor) -> None:
    """In place: input := R and the reflectors (module doc); tau (..., min(m, n))."""
    if input.numel() == 0:
        return
    target = _colmajor(input)
    w = _batched(target)
    taus = householder(w)
    copy_kernel((target,), (w.view(target.shape),))
    copy_kernel((tau,), (taus.view(tau.shape),))


@kernel()
def orgqr(result: torch.Tensor, tau: torch.Tensor) -> None:
    """In place: result (m x c, m >= c, the reflectors below its diagonal) := the first c
    columns of H_0 ... H_{k-1} (module doc); k = tau.shape[-1] <= c."""
    if result.numel() == 0:
        return
    target = _colmajor(result)
    w = _batched(target)
    B, m, c = w.shape
    q = torch.eye(m, c, dtype=w.dtype, device=w.device).expand(B, m, c).contiguous()
    apply_q(w, tau.reshape(B, -1), q, transpose=False)
    copy_kernel((target,), (q.view(target.shape),))


@kernel()
def ormqr(input: torch.Tensor, tau: torch.Tensor, other: torch.Tensor, left: bool,
          transpose: bool) -> None:  # fmt: skip
    """In place: other := Q other, Q^T other (left), other Q or other Q^T (right), Q the
    product of input's reflectors and tau's scales (torch.ormqr). Its dtype is checked
    here, after PyTorch's shape checks (as CPU's order of errors), not by the manifest."""
    if input.dtype not in (torch.float32, torch.float64):
        raise NotImplementedError(f"\"ormqr\" not implemented for '{scalar_name(input.dtype)}'")
    if other.numel() == 0 or tau.numel() == 0:
        return
    w = _batched(_colmajor(input))
    target = _colmajor(other)
    c = _batched(target)
    taus = tau.reshape(w.shape[0], -1)
    # right: C Q = (Q^T C^T)^T, so Q's side turns with the transpose
    apply_q(w, taus, c if left else c.mT, transpose == left)
    copy_kernel((target,), (c.view(target.shape),))


def _lstsq_svd(w, c, rcond):
    """The minimum-norm least squares solution by SVD (the rank-revealing drivers:
    gelsy, gelsd, gelss): singular values below rcond times the largest count as zero.
    w (B, m, n), c (B, max(m, n), r) in place as gels' (rows n..m-1: U^T B's remainder).
    Returns (rank (B,), singular values (B, k))."""
    m, n = w.shape[-2], w.shape[-1]
    k = min(m, n)
    U, S, Vh = torch.linalg.svd(w, full_matrices=True)
    if rcond < 0:  # LAPACK's convention: machine precision
        rcond = torch.finfo(w.dtype).eps
    keep = S > rcond * S[:, :1]
    ut_b = torch.matmul(U.mT, c[:, :m])
    y = torch.where(keep.unsqueeze(2), ut_b[:, :k] / torch.where(keep, S, 1).unsqueeze(2), 0)
    c[:, :n] = torch.matmul(Vh[:, :k].mT, y)
    if m > n:
        c[:, n:m] = ut_b[:, n:m]
    return keep.sum(1), S


@kernel()
def lstsq(a: torch.Tensor, b: torch.Tensor, rank: torch.Tensor, singular_values: torch.Tensor,
          infos: torch.Tensor, rcond: float, driver_name: str) -> None:  # fmt: skip
    """b's first rows := the solution of min |A X - B| (b holds B in its first m rows).
    gels (A of full rank): the least squares solution (m >= n; rows n..m-1 keep Q^T B's
    remainder, from which PyTorch takes the residuals) or the minimum-norm one (m < n),
    by QR of A or of A^T; infos := i + 1 where R's diagonal i is zero. gelsy, gelsd,
    gelss: the minimum-norm solution by SVD (_lstsq_svd), rank and singular values
    where asked (gelsy's rank from the singular values, not a pivoted QR)."""
    m, n = a.shape[-2], a.shape[-1]
    if b.numel() == 0 or a.numel() == 0:
        return
    target = _colmajor(b)
    batch = target.shape[:-2]
    w = _colmajor(a).expand(*batch, m, n).reshape(-1, m, n).clone()
    c = _batched(target)
    if driver_name != "gels":
        r, sv = _lstsq_svd(w, c, rcond)
        copy_kernel((target,), (c.view(target.shape),))
        if rank.numel():
            copy_kernel((rank,), (r.to(rank.dtype).view(rank.shape),))
        if singular_values.numel():
            copy_kernel((singular_values,), (sv.view(singular_values.shape),))
        if infos.numel():
            infos.zero_()
        return
    if m < n:
        w = w.mT.contiguous()
    taus = householder(w)
    k = min(m, n)
    R = torch.triu(w[:, :k, :k])
    if m >= n:
        apply_q(w, taus, c[:, :m], transpose=True)
        c[:, :n] = torch.linalg.solve_triangular(R, c[:, :n], upper=True)
    else:  # A = R^T Q^T: y = R^-T B, X = Q (y, 0)
        y = torch.linalg.solve_triangular(R.mT, c[:, :m], upper=False)
        c[:, :m] = y
        c[:, m:n] = 0
        apply_q(w, taus, c[:, :n], transpose=False)
    copy_kernel((target,), (c.view(target.shape),))
    if infos.numel():
        zero = torch.diagonal(R, dim1=-2, dim2=-1) == 0
        first = torch.where(zero.any(1), zero.to(torch.int32).argmax(1) + 1, 0)
        copy_kernel((infos,), (first.to(infos.dtype).view(infos.shape),))
