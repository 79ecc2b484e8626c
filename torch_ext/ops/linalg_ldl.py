"""LDL^T with Bunch-Kaufman pivoting, for PyTorch's generic linalg.ldl_factor(_ex) and
linalg.ldl_solve, through the two DispatchStubs they call:

  ldl_factor_stub(LD, pivots, info, upper, hermitian)  LD := L and D of the lower
      triangle (PyTorch passes upper = False), pivots LAPACK-style (1-based; a 2x2
      block's two entries both -p), info the first zero pivot (1-based; 0 if none)
  ldl_solve_stub(LD, pivots, B, upper, hermitian)      B := A^-1 B

The algorithms are LAPACK's unblocked sytf2 / sytrs (lower), so the pivots match the
CPU's: alpha = (1 + sqrt(17)) / 8; column k is its own pivot when |a_kk| >= alpha *
colmax, else row imax (1x1 or with k a 2x2 block) by the row maximum. One program per
matrix keeps the whole (symmetric) matrix in registers and walks its columns; every
choice is a select, so the steps need no host syncs. Meant for the small matrices of
models and tests (n <= 128, float32/float64).
"""

import math

import torch
import triton
import triton.language as tl

from ._common import tl_float_acc
from ._declare import kernel
from ._launch import launch, next_pow2

MAX_N = 128


@triton.jit
def _at(M, R, C, a, b):
    return tl.sum(tl.sum(tl.where((R == a) & (C == b), M, 0.0), 1), 0)


@triton.jit
def _sym(S, R, C):
    return tl.where(R >= C, S, tl.trans(S))


@triton.jit
def _ldl_factor_kernel(
    ld, piv, info, n, sb, sr, sc, ALPHA: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    b = tl.program_id(0).to(tl.int64)
    r = tl.arange(0, BLOCK)
    R = r[:, None]
    C = r[None, :]
    inside = (R < n) & (C < n)
    lower = tl.maximum(R, C) * sr + tl.minimum(R, C) * sc  # the lower triangle, mirrored
    S = tl.load(ld + b * sb + lower, mask=inside, other=0).to(ACC)
    pv = tl.zeros((BLOCK,), tl.int32)
    first = tl.program_id(0) * 0
    k = tl.program_id(0) * 0
    while k < n:
        colk = tl.sum(tl.where(C == k, S, 0.0), 1)
        absakk = tl.abs(tl.sum(tl.where(r == k, colk, 0.0), 0))
        below = (r > k) & (r < n)
        absc = tl.where(below, tl.abs(colk), -1.0)
        colmax = tl.maximum(tl.max(absc, 0), 0.0)
        imax = tl.min(tl.where(below & (absc == colmax), r, BLOCK), 0)
        rowi = tl.sum(tl.where(R == imax, S, 0.0), 0)
        rowmax = tl.max(tl.where((r >= k) & (r < n) & (r != imax), tl.abs(rowi), 0.0), 0)
        aii = tl.abs(tl.sum(tl.where(r == imax, rowi, 0.0), 0))
        zero = (tl.maximum(absakk, colmax) == 0) | (absakk != absakk)
        own = zero | (absakk >= ALPHA * colmax)
        own = own | (absakk >= ALPHA * colmax * (colmax / tl.where(own, 1.0, rowmax)))
        one_other = ~own & (aii >= ALPHA * rowmax)
        kp = tl.where(own, k, imax)
        kstep = tl.where(own | one_other, 1, 2)
        first = tl.where(zero & (first == 0), k + 1, first)
        kk = k + kstep - 1
        # interchange rows and columns kk and kp of the trailing matrix (from column k)
        rkk = tl.sum(tl.where(R == kk, S, 0.0), 0)
        rkp = tl.sum(tl.where(R == kp, S, 0.0), 0)
        S = tl.where((R == kk) & (C >= k), rkp[None, :], tl.where((R == kp) & (C >= k), rkk[None, :], S))  # fmt: skip
        ckk = tl.sum(tl.where(C == kk, S, 0.0), 1)
        ckp = tl.sum(tl.where(C == kp, S, 0.0), 1)
        S = tl.where((C == kk) & (R >= k), ckp[:, None], tl.where((C == kp) & (R >= k), ckk[:, None], S))  # fmt: skip
        # 1x1 pivot: rank-1 update, then the column scaled
        x = tl.sum(tl.where(C == k, S, 0.0), 1)
        d11 = 1.0 / tl.sum(tl.where(r == k, x, 0.0), 0)
        xb = tl.where(r > k, x, 0.0)
        S1 = S + xb[:, None] * (-d11 * xb)[None, :]
        S1 = tl.where((C == k) & (R > k), S1 * d11, S1)
        # 2x2 pivot: rank-2 update of the trailing matrix, the two columns replaced
        ak = x
        ak1 = tl.sum(tl.where(C == k + 1, S, 0.0), 1)
        e21 = tl.sum(tl.where(r == k + 1, ak, 0.0), 0)
        e21 = tl.where(e21 == 0, 1.0, e21)
        f11 = tl.sum(tl.where(r == k + 1, ak1, 0.0), 0) / e21
        f22 = tl.sum(tl.where(r == k, ak, 0.0), 0) / e21
        t = 1.0 / (f11 * f22 - 1.0)
        f21 = t / e21
        wk = f21 * (f11 * ak - ak1)
        wkp1 = f21 * (f22 * ak1 - ak)
        tail = (R >= k + 2) & (C >= k + 2)
        S2 = tl.where(tail, S - ak[:, None] * wk[None, :] - ak1[:, None] * wkp1[None, :], S)
        S2 = tl.where((C == k) & (R >= k + 2), wk[:, None], S2)
        S2 = tl.where((C == k + 1) & (R >= k + 2), wkp1[:, None], S2)
        S = tl.where(zero, S, _sym(tl.where(kstep == 1, S1, S2), R, C))
        pv = tl.where(kstep == 1, tl.where(r == k, kp + 1, pv), tl.where((r == k) | (r == k + 1), -(kp + 1), pv))  # fmt: skip
        k += kstep
    own_tri = (R >= C) & inside
    tl.store(ld + b * sb + R * sr + C * sc, S.to(ld.dtype.element_ty), mask=own_tri)
    tl.store(piv + b * n + r, pv, mask=r < n)
    tl.store(info + b, first)


@triton.jit
def _row(B, R, i):
    return tl.sum(tl.where(R == i, B, 0.0), 0)


@triton.jit
def _swap_rows(B, R, a, c):
    ra = _row(B, R, a)
    rc = _row(B, R, c)
    return tl.where(R == a, rc[None, :], tl.where(R == c, ra[None, :], B))


@triton.jit
def _ldl_solve_kernel(
    ld, piv, bmat, n, nrhs, sb, sr, sc, bb, br, bc,
    ACC: tl.constexpr, BLOCK: tl.constexpr, BLOCK_R: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0).to(tl.int64)
    r = tl.arange(0, BLOCK)
    R = r[:, None]
    C = r[None, :]
    RB = tl.arange(0, BLOCK_R)[None, :]
    A = tl.load(ld + b * sb + R * sr + C * sc, mask=(R < n) & (C < n) & (R >= C), other=0).to(ACC)
    bmask = (R < n) & (RB < nrhs)
    B = tl.load(bmat + b * bb + R * br + RB * bc, mask=bmask, other=0).to(ACC)
    pv = tl.load(piv + b * n + r, mask=r < n, other=1)
    # L D y = P b, forwards
    k = tl.program_id(0) * 0
    while k < n:
        p = tl.sum(tl.where(r == k, pv, 0), 0)
        two = p < 0
        kp = tl.where(two, -p, p) - 1
        B = _swap_rows(B, R, tl.where(two, k + 1, k), kp)
        ck = tl.sum(tl.where(C == k, A, 0.0), 1)
        ck1 = tl.sum(tl.where(C == k + 1, A, 0.0), 1)
        bk = _row(B, R, k)
        bk1 = _row(B, R, k + 1)
        akk = tl.sum(tl.where(r == k, ck, 0.0), 0)
        # 1x1
        B1 = tl.where(R > k, B - ck[:, None] * bk[None, :], B)
        B1 = tl.where(R == k, B1 / tl.where(two, 1.0, akk), B1)
        # 2x2
        B2 = tl.where(R >= k + 2, B - ck[:, None] * bk[None, :], B)
        B2 = tl.where(R >= k + 2, B2 - ck1[:, None] * bk1[None, :], B2)
        e = tl.sum(tl.where(r == k + 1, ck, 0.0), 0)
        e = tl.where(two, e, 1.0)
        am1 = akk / e
        a1 = tl.sum(tl.where(r == k + 1, ck1, 0.0), 0) / e
        den = am1 * a1 - 1.0
        bm1 = bk / e
        b1 = bk1 / e
        B2 = tl.where(R == k, ((a1 * bm1 - b1) / den)[None, :], B2)
        B2 = tl.where(R == k + 1, ((am1 * b1 - bm1) / den)[None, :], B2)
        B = tl.where(two, B2, B1)
        k += tl.where(two, 2, 1)
    # L^T x = y, backwards
    k = n - 1
    while k >= 0:
        p = tl.sum(tl.where(r == k, pv, 0), 0)
        two = p < 0
        ck = tl.sum(tl.where(C == k, A, 0.0), 1)
        ckm = tl.sum(tl.where(C == k - 1, A, 0.0), 1)
        below = tl.where(R > k, B, 0.0)
        B = tl.where(R == k, B - tl.sum(ck[:, None] * below, 0)[None, :], B)
        B = tl.where((R == k - 1) & two, B - tl.sum(ckm[:, None] * below, 0)[None, :], B)
        B = _swap_rows(B, R, k, tl.where(two, -p, p) - 1)
        k -= tl.where(two, 2, 1)
    tl.store(bmat + b * bb + R * br + RB * bc, B.to(bmat.dtype.element_ty), mask=bmask)


def _check(LD, name):
    n = LD.shape[-1]
    if n > MAX_N:
        raise NotImplementedError(
            f"torch_ext: {name} on privateuseone handles matrices up to {MAX_N}x{MAX_N} "
            f"(got {n}x{n})"
        )
    if LD.dtype not in (torch.float32, torch.float64):
        raise NotImplementedError(f"torch_ext: {name} on privateuseone takes float32/float64")
    return n


@kernel()
def ldl_factor(
    LD: torch.Tensor, pivots: torch.Tensor, info: torch.Tensor, upper: bool, hermitian: bool
) -> None:
    if upper:
        raise NotImplementedError("torch_ext: ldl_factor with upper=True")
    n = _check(LD, "linalg.ldl_factor")
    if LD.numel() == 0:
        info.zero_()
        return
    batch = LD.numel() // (n * n)
    ld = LD.reshape(-1, n, n) if LD.dim() != 3 else LD
    if batch and ld.data_ptr() != LD.data_ptr():
        raise NotImplementedError("torch_ext: ldl_factor needs LD's batch dims to merge")
    launch(
        _ldl_factor_kernel, (batch,), ld, pivots, info, n, ld.stride(0), ld.stride(1),
        ld.stride(2), ALPHA=(1.0 + math.sqrt(17.0)) / 8.0, ACC=tl_float_acc(LD.dtype),
        BLOCK=max(next_pow2(n), 16),
    )  # fmt: skip


@kernel()
def ldl_solve(
    LD: torch.Tensor, pivots: torch.Tensor, B: torch.Tensor, upper: bool, hermitian: bool
) -> None:
    if upper:
        raise NotImplementedError("torch_ext: ldl_solve with upper=True")
    n = _check(LD, "linalg.ldl_solve")
    if B.numel() == 0 or n == 0:
        return
    nrhs = B.shape[-1]
    ld = LD.expand(*B.shape[:-2], n, n).reshape(-1, n, n)
    pv = pivots.expand(*B.shape[:-2], n).reshape(-1, n).contiguous()
    bm = B.reshape(-1, n, nrhs)
    if bm.data_ptr() != B.data_ptr() or (bm.shape[0] > 1 and bm.stride(0) == 0):
        raise NotImplementedError("torch_ext: ldl_solve needs B's batch dims to merge")
    launch(
        _ldl_solve_kernel, (bm.shape[0],), ld, pv, bm, n, nrhs, ld.stride(0), ld.stride(1),
        ld.stride(2), bm.stride(0), bm.stride(1), bm.stride(2), ACC=tl_float_acc(B.dtype),
        BLOCK=max(next_pow2(n), 16), BLOCK_R=max(next_pow2(nrhs), 16),
    )  # fmt: skip
