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


@kernel()
def geqrf(input: torch.Tensor, tau: torch.Tensor) -> None:
    """In place: input := R and the reflectors (module doc); tau (..., min(m, n))."""
    if input.numel() == 0:
        return
    target = _colmajor(input)
    w = _batched(target)
    B, m, n = w.shape
    k = min(m, n)
    taus = torch.empty(B, k, dtype=w.dtype, device=w.device)
    for j in range(k):
        t = _reflector(w, j)
        taus[:, j] = t
        if j + 1 < n:
            _apply(w, j, t, w[:, j:, j + 1 :])
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
    taus = tau.reshape(B, -1)
    q = torch.eye(m, c, dtype=w.dtype, device=w.device).expand(B, m, c).contiguous()
    for j in reversed(range(taus.shape[1])):
        # rows and columns before j are those of the identity still: H_j leaves them
        _apply(w, j, taus[:, j], q[:, j:, j:])
    copy_kernel((target,), (q.view(target.shape),))
