"""Unpacking an LU factorisation (PyTorch's lu_unpack kernel is CPU/CUDA-specific):

  lu_unpack.out impl: (LU_data, LU_pivots, unpack_data, unpack_pivots, P, L, U)
      (PyTorch's meta checked and sized P, L, U)

L is LU's strict lower triangle (its first min(m, n) columns) with a unit diagonal,
U its upper triangle (first min(m, n) rows); P the permutation matrix of the
LAPACK-style pivots (1-based row swaps, applied in order), with A = P L U. The
swaps are sequential, so one program per matrix applies them to a vector in
registers; P is then a scatter of ones. linalg.lu is PyTorch's generic composite of
lu_factor_ex and this.
"""

import torch
import triton
import triton.language as tl

from ._common import contiguous
from ._declare import kernel
from ._launch import launch, next_pow2


@triton.jit
def _pivots_to_perm_kernel(piv, perm, K, M, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    p = cols.to(tl.int64)
    for i in range(0, K):
        j = tl.load(piv + b * K + i).to(tl.int64) - 1
        a = tl.sum(tl.where(cols == i, p, 0), 0)
        c = tl.sum(tl.where(cols == j, p, 0), 0)
        p = tl.where(cols == i, c, tl.where(cols == j, a, p))
    tl.store(perm + b * M + cols, p, mask=cols < M)


def pivots_to_permutation(pivots, m):
    """perm (*batch, m) int64: row i of P A is row perm[i] of A."""
    k = pivots.shape[-1]
    batch = list(pivots.shape[:-1])
    perm = torch.empty(batch + [m], dtype=torch.int64, device=pivots.device)
    nb = perm.numel() // max(m, 1)
    if perm.numel() == 0:
        return perm
    launch(
        _pivots_to_perm_kernel, (nb,), contiguous(pivots), perm, k, m, BLOCK=next_pow2(m)
    )  # fmt: skip
    return perm


@kernel()
def lu_unpack(
    LU_data: torch.Tensor,
    LU_pivots: torch.Tensor,
    unpack_data: bool,
    unpack_pivots: bool,
    P: torch.Tensor,
    L: torch.Tensor,
    U: torch.Tensor,
) -> None:
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    if unpack_data:
        # linalg.lu passes L (m > n) or U (m <= n) as LU_data: the other one first.
        if m > n:
            torch.triu(LU_data.narrow(-2, 0, n), out=U)
            torch.tril(LU_data, -1, out=L)
        else:
            torch.tril(LU_data.narrow(-1, 0, m), -1, out=L)
            torch.triu(LU_data, out=U)
        L.diagonal(0, -2, -1).fill_(1)
    if unpack_pivots:
        P.zero_()
        if P.numel():
            if LU_pivots.dtype != torch.int32:
                raise RuntimeError(
                    "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                    f"torch.int32 dtype. Note: this function is intended to be used with the "
                    f"output produced by torch.linalg.lu_factor, got {LU_pivots.dtype}"
                )
            perm = pivots_to_permutation(LU_pivots, m)
            P.mT.scatter_(-1, perm.unsqueeze(-1), 1.0)
