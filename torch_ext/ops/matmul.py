"""Matrix products with tl.dot: mm, bmm, addmm, baddbmm, mv, dot.

Structured impls (2): mm.out (self, mat2, out); bmm.out (self, mat2, out);
addmm.out (self, mat1, mat2, beta, alpha, out); baddbmm.out (self, batch1,
batch2, beta, alpha, out).  Plain (3): mv(self, vec), mv_out(self, vec, out),
dot(self, tensor).

Any strides are accepted (a broadcast bias has stride 0).  float32 uses
input_precision="ieee" (no TF32) so results match PyTorch's CPU reference.
"""

import triton
import triton.language as tl
import torch

from ._common import tl_float_acc
from ..backends import spec
from ._launch import cdiv, launch, next_pow2
from ._declare import Scalar, kernel
from ._common import sized_like


@kernel()
def addbmm(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    beta: Scalar = 1,
    alpha: Scalar = 1,
) -> torch.Tensor:
    """Sum over the batch of batch1[i] @ batch2[i], as one matmul over the concatenated
    inner dimension (fp32 accumulation across batches, one launch)."""
    b, n, k = batch1.shape
    p = batch2.shape[2]
    m1 = batch1.transpose(0, 1).reshape(n, b * k)
    m2 = batch2.reshape(b * k, p)
    return torch.addmm(self, m1, m2, beta=beta, alpha=alpha)


@kernel()
def addbmm_out(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    beta: Scalar,
    alpha: Scalar,
    out: torch.Tensor,
) -> torch.Tensor:
    return sized_like(out, addbmm(self, batch1, batch2, beta, alpha))


@kernel()
def addbmm_(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    beta: Scalar = 1,
    alpha: Scalar = 1,
) -> torch.Tensor:
    self.copy_(addbmm(self, batch1, batch2, beta, alpha))
    return self


@kernel()
def addmv_out(
    self: torch.Tensor,
    mat: torch.Tensor,
    vec: torch.Tensor,
    beta: Scalar,
    alpha: Scalar,
    out: torch.Tensor,
) -> None:
    """addmv.out impl: out = beta * self + alpha * (mat @ vec); beta == 0 ignores self."""
    n = mat.shape[0]
    res = torch.addmm(self.expand(n).unsqueeze(1), mat, vec.unsqueeze(1), beta=beta, alpha=alpha)
    out.copy_(res.squeeze(1))


@kernel()
def vdot(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.dot(self.conj(), other)


@kernel()
def vdot_out(self: torch.Tensor, other: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return sized_like(out, vdot(self, other))


@triton.jit
def _mm_kernel(
    a,
    b,
    c,
    bias,
    M,
    N,
    K,
    s_ab,
    s_am,
    s_ak,
    s_bb,
    s_bk,
    s_bn,
    s_cb,
    s_cm,
    s_cn,
    s_xb,
    s_xm,
    s_xn,
    alpha,
    beta,
    HAS_BIAS: tl.constexpr,
    ACC: tl.constexpr,
    PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
    EVEN_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    # Grouped order: GROUP_M row tiles share their column tiles in L2.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % group_m
    pid_n = (pid % group) // group_m
    batch = tl.program_id(1).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # Rows and columns past the edge read row/column (i mod size), in bounds:
    # the loads need no mask there (their results are never stored).
    ra = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rb = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    a_ptr = a + batch * s_ab + ra[:, None].to(tl.int64) * s_am + rk[None, :] * s_ak
    b_ptr = b + batch * s_bb + rb[None, :].to(tl.int64) * s_bn + rk[:, None] * s_bk
    acc = tl.zeros((BLOCK_M, BLOCK_N), ACC)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            at = tl.load(a_ptr)
            bt = tl.load(b_ptr)
        else:
            k = k0 + rk
            at = tl.load(a_ptr, mask=k[None, :] < K, other=0)
            bt = tl.load(b_ptr, mask=k[:, None] < K, other=0)
        a_ptr += BLOCK_K * s_ak
        b_ptr += BLOCK_K * s_bk
        if UPCAST:
            at = at.to(tl.float32)
            bt = bt.to(tl.float32)
        acc += tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)
    acc = acc * alpha
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    if HAS_BIAS:
        x = tl.load(
            bias + batch * s_xb + rm[:, None] * s_xm + rn[None, :] * s_xn, mask=cmask, other=0
        ).to(ACC)
        acc += beta * x
    tl.store(
        c + batch * s_cb + rm[:, None] * s_cm + rn[None, :] * s_cn,
        acc.to(c.dtype.element_ty),
        mask=cmask,
    )


def _check_dtype(dtype):
    if not dtype.is_floating_point:
        raise NotImplementedError(f"torch_ext: matrix products of {dtype} are not supported")


def _bmm(a, b, c, bias=None, alpha=1.0, beta=0.0):
    """c[i] = alpha * a[i] @ b[i] + beta * bias[i]; 3-d operands, any strides."""
    _check_dtype(a.dtype)
    Bt, M, K = a.shape
    N = b.shape[2]
    if c.numel() == 0:
        return
    if K == 0 and bias is None:
        from .copy import fill_

        fill_(c, 0)
        return
    # "n" (rows contiguous) or "t" (columns contiguous) per operand, as BLAS says.
    layout = ("t" if a.stride(1) != 1 else "n") + ("t" if b.stride(2) != 1 else "n")
    bm, bn, bk, warps, stages = spec("mm_config", M, N, K, a.dtype, layout) or _default_config(
        M, N, K, a.dtype
    )
    bm = max(16, min(bm, next_pow2(M)))
    bn = max(16, min(bn, next_pow2(N)))
    bk = max(16, min(bk, next_pow2(max(K, 1))))
    acc = tl_float_acc(a.dtype)
    # A driver whose tl.dot lacks a dtype (the interpreter: bfloat16) gets fp32 tiles.
    upcast = bool(spec("dot_needs_fp32_inputs", a.dtype))
    precision = "ieee" if a.dtype in (torch.float32, torch.float64) or upcast else None
    has_bias = bias is not None and beta != 0
    x = bias if has_bias else c
    grid = (cdiv(M, bm) * cdiv(N, bn), Bt)
    launch(
        _mm_kernel,
        grid,
        a,
        b,
        c,
        x,
        M,
        N,
        K,
        *a.stride(),
        *b.stride(),
        *c.stride(),
        *x.stride(),
        alpha,
        beta,
        HAS_BIAS=has_bias,
        ACC=acc,
        PRECISION=precision,
        UPCAST=upcast,
        EVEN_K=K % bk == 0,
        GROUP_M=8,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        num_warps=warps,
        num_stages=stages,
    )


def _default_config(M, N, K, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for compiled Triton."""
    if dtype in (torch.float16, torch.bfloat16) and M >= 128 and N >= 128:
        return 128, 128, 64, 8, 3
    if dtype == torch.float64:
        return 32, 32, 16, 4, 2
    return 64, 64, 32, 4, 3


def _bias3(t, shape):
    # Broadcast `t` to the 3-d `shape` as a strided view (stride 0 where expanded).
    t = t.expand(shape) if t.dim() == 3 else t.expand(shape[1:]).unsqueeze(0).expand(shape)
    return t


@kernel("mm")
def mm_out(self: torch.Tensor, mat2: torch.Tensor, out: torch.Tensor) -> None:
    _bmm(self.unsqueeze(0), mat2.unsqueeze(0), out.unsqueeze(0))


@kernel("bmm")
def bmm_out(self: torch.Tensor, mat2: torch.Tensor, out: torch.Tensor) -> None:
    _bmm(self, mat2, out)


@kernel("addmm")
def addmm_out(
    self: torch.Tensor,
    mat1: torch.Tensor,
    mat2: torch.Tensor,
    beta: Scalar,
    alpha: Scalar,
    out: torch.Tensor,
) -> None:
    shape = (1, mat1.shape[0], mat2.shape[1])
    if (
        beta != 0
        and out.data_ptr() == self.data_ptr()
        and self.numel() > 0
        and self.stride() == out.stride()
        and self.shape == out.shape
    ):
        bias = out.unsqueeze(0)  # in-place addmm_: each element reads its own bias first
    else:
        bias = _bias3(self, shape)
    _bmm(mat1.unsqueeze(0), mat2.unsqueeze(0), out.unsqueeze(0), bias, alpha, beta)


@kernel("baddbmm")
def baddbmm_out(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    beta: Scalar,
    alpha: Scalar,
    out: torch.Tensor,
) -> None:
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    _bmm(batch1, batch2, out, _bias3(self, shape), alpha, beta)


@kernel()
def mv_out(self: torch.Tensor, vec: torch.Tensor, out: torch.Tensor) -> None:
    out.resize_((self.shape[0],))  # a plain out= op sizes its own out
    _bmm(self.unsqueeze(0), vec.view(-1, 1).unsqueeze(0), out.view(1, -1, 1))


@kernel()
def mv(self: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
    out = torch.empty((self.shape[0],), dtype=self.dtype, device=self.device)
    mv_out(self, vec, out)
    return out


@kernel()
def dot(self: torch.Tensor, tensor: torch.Tensor) -> torch.Tensor:
    out = torch.empty((), dtype=self.dtype, device=self.device)
    _bmm(self.view(1, 1, -1), tensor.view(1, -1, 1), out.view(1, 1, 1))
    return out


def mm(self, mat2):
    out = torch.empty((self.shape[0], mat2.shape[1]), dtype=self.dtype, device=self.device)
    mm_out(self, mat2, out)
    return out
