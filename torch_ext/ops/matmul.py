"""Matrix products with tl.dot: mm, bmm, addmm, baddbmm, mv, dot.

Structured impls (2): mm.out (self, mat2, out); bmm.out (self, mat2, out);
addmm.out (self, mat1, mat2, beta, alpha, out); baddbmm.out (self, batch1,
batch2, beta, alpha, out).  Plain (3): mv(self, vec), mv_out(self, vec, out),
dot(self, tensor).

Any strides are accepted (a broadcast bias has stride 0). float32 follows PyTorch's
TF32 setting for CUDA's matmuls (torch.backends.cuda.matmul.fp32_precision, or the legacy
torch.set_float32_matmul_precision: "highest", PyTorch's default, multiplies in float32,
input_precision="ieee"; "high" and "medium" in TF32; _common.tf32_allowed); the launch
plans' keys hold that flag. fp16/bf16 products of at least 256 in each dimension (or
a narrower side and at least 2**27 multiply-adds: _skinny_candidates) take the fastest
of a few tile configurations (ops/_tune.py, family "mm"), measured once per
size bucket on the cuda driver and remembered across processes.
"""

import math

import triton
import triton.language as tl
import torch

from ._common import float_acc, tf32_allowed, tl_float_acc
from ..backends import spec
from ._launch import ARRIVALS, arrival_counters, launch, pow2_at_most
from ._tune import tuned
from .matmul_candidates import WIDE, mm_candidates, size_bucket, tiles_of
from ._symbolic import empty, expand_strides, numel, sizes, strides
from ._declare import Scalar, kernel
from ._common import scalar_name, sized_like


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
def _mm_store(acc, c, bias, batch, rm, rn, M, N, s_cb, s_cm, s_cn, s_xb, s_xm, s_xn, alpha,
              beta, HAS_BIAS: tl.constexpr, ACC: tl.constexpr):  # fmt: skip
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


@triton.jit
def split_sum(acc, ws, arrivals, tile, split, tiles, nsplit, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr):  # fmt: skip
    """Split-K's merge: a split's partial tile `acc` stored to float32 scratch `ws`
    (`tile` of the `tiles` split ones, `nsplit` partials each: a constant or a run-time
    value); the last split of the tile to arrive (counted in `arrivals`) sums them in
    split order (deterministic) and re-arms the tile's counter. Returns (that sum, True)
    there, (acc, False) elsewhere: the caller stores the tile where the flag is set."""
    part_tile = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    own = (split * tiles + tile).to(tl.int64) * (BLOCK_M * BLOCK_N)
    tl.store(ws + own + part_tile, acc)
    tl.debug_barrier()  # every warp's partial is written before the arrival
    last = tl.atomic_add(arrivals + tile, 1) == nsplit - 1
    if last:
        tl.debug_barrier()
        acc = tl.zeros_like(acc)
        for s in range(nsplit):
            part = (s * tiles + tile).to(tl.int64) * (BLOCK_M * BLOCK_N)
            acc += tl.load(ws + part + part_tile, cache_modifier=".cg")
        tl.atomic_xchg(arrivals + tile, 0)
    return acc, last


@triton.jit
def grouped(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """(row tile, column tile) of output tile number `tile` in grouped order: GROUP_M
    row tiles share their column tiles in L2."""
    group = GROUP_M * tiles_n
    first_m = (tile // group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    return first_m + (tile % group) % group_m, (tile % group) // group_m


@triton.jit
def _mm_kernel(
    a,
    b,
    c,
    bias,
    ws,
    arrivals,
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
    DP,
    HAS_BIAS: tl.constexpr,
    ACC: tl.constexpr,
    PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
    EVEN_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT: tl.constexpr,
    BLOCK_N2: tl.constexpr = 0,
):
    # Split-K: the first DP tiles whole, one program each; each later tile by SPLIT
    # programs side by side, each over its own run of K (all tiles when DP is 0; the
    # tail of a part-filled last wave otherwise).
    # BLOCK_N2 > 0: a tile is BLOCK_N + BLOCK_N2 columns wide (128 + 64 = 192: a width
    # that is no power of two), a second product on the same A block (WIDE).
    pid = tl.program_id(0)
    tile = pid
    k_lo = pid * 0
    k_hi = K
    if SPLIT > 1:
        whole = pid < DP
        q = tl.maximum(pid - DP, 0)
        split = tl.where(whole, 0, q % SPLIT)  # 0 for a whole tile: its K from 0
        tile = tl.where(whole, pid, DP + q // SPLIT)
        per = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT) * BLOCK_K
        k_lo = split * per
        k_hi = tl.where(whole, K, tl.minimum(K, k_lo + per))
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N + BLOCK_N2)
    pid_m, pid_n = grouped(tile, tiles_m, tiles_n, GROUP_M)
    batch = tl.program_id(1).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * (BLOCK_N + BLOCK_N2) + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # Rows and columns past the edge read row/column (i mod size), in bounds:
    # the loads need no mask there (their results are never stored).
    ra = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rb = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    a_ptr = a + batch * s_ab + ra[:, None].to(tl.int64) * s_am + (k_lo + rk[None, :]) * s_ak
    b_ptr = b + batch * s_bb + rb[None, :].to(tl.int64) * s_bn + (k_lo + rk[:, None]) * s_bk
    acc = tl.zeros((BLOCK_M, BLOCK_N), ACC)
    if BLOCK_N2 > 0:
        rn2 = pid_n * (BLOCK_N + BLOCK_N2) + BLOCK_N + tl.arange(0, BLOCK_N2)
        rb2 = tl.max_contiguous(tl.multiple_of(rn2 % N, BLOCK_N2), BLOCK_N2)
        b2_ptr = b + batch * s_bb + rb2[None, :].to(tl.int64) * s_bn + (k_lo + rk[:, None]) * s_bk
        acc2 = tl.zeros((BLOCK_M, BLOCK_N2), ACC)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        if EVEN_K:
            at = tl.load(a_ptr)
            bt = tl.load(b_ptr)
        else:
            k = k0 + rk
            at = tl.load(a_ptr, mask=k[None, :] < k_hi, other=0)
            bt = tl.load(b_ptr, mask=k[:, None] < k_hi, other=0)
        a_ptr += BLOCK_K * s_ak
        b_ptr += BLOCK_K * s_bk
        if UPCAST:
            at = at.to(tl.float32)
            bt = bt.to(tl.float32)
        acc += tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)
        if BLOCK_N2 > 0:
            if EVEN_K:
                bt2 = tl.load(b2_ptr)
            else:
                bt2 = tl.load(b2_ptr, mask=(k0 + rk)[:, None] < k_hi, other=0)
            b2_ptr += BLOCK_K * s_bk
            if UPCAST:
                bt2 = bt2.to(tl.float32)
            acc2 += tl.dot(at, bt2, input_precision=PRECISION, out_dtype=ACC)
    if SPLIT > 1:
        if pid >= DP:  # a split tile: partials and counters numbered from the first
            split_tiles = tiles_m * tiles_n - DP
            acc, last = split_sum(acc, ws, arrivals, tile - DP, split, split_tiles, SPLIT,
                                  BLOCK_M, BLOCK_N)  # fmt: skip
            if last:
                _mm_store(acc, c, bias, batch, rm, rn, M, N, s_cb, s_cm, s_cn, s_xb, s_xm,
                          s_xn, alpha, beta, HAS_BIAS, ACC)  # fmt: skip
            if BLOCK_N2 > 0:  # the second block's partials and counters after the first's
                acc2, last = split_sum(acc2, ws + split_tiles * SPLIT * BLOCK_M * BLOCK_N,
                                       arrivals + split_tiles, tile - DP, split, split_tiles,
                                       SPLIT, BLOCK_M, BLOCK_N2)  # fmt: skip
                if last:
                    _mm_store(acc2, c, bias, batch, rm, rn2, M, N, s_cb, s_cm, s_cn, s_xb,
                              s_xm, s_xn, alpha, beta, HAS_BIAS, ACC)  # fmt: skip
        else:
            _mm_store(acc, c, bias, batch, rm, rn, M, N, s_cb, s_cm, s_cn, s_xb, s_xm, s_xn,
                      alpha, beta, HAS_BIAS, ACC)  # fmt: skip
            if BLOCK_N2 > 0:
                _mm_store(acc2, c, bias, batch, rm, rn2, M, N, s_cb, s_cm, s_cn, s_xb, s_xm,
                          s_xn, alpha, beta, HAS_BIAS, ACC)  # fmt: skip
    else:
        _mm_store(acc, c, bias, batch, rm, rn, M, N, s_cb, s_cm, s_cn, s_xb, s_xm, s_xn, alpha,
                  beta, HAS_BIAS, ACC)  # fmt: skip
        if BLOCK_N2 > 0:
            _mm_store(acc2, c, bias, batch, rm, rn2, M, N, s_cb, s_cm, s_cn, s_xb, s_xm, s_xn,
                      alpha, beta, HAS_BIAS, ACC)  # fmt: skip


def _whole_tiles(tiles, forced):
    """Tiles a split candidate runs whole before the split ones: with a tail mode (its
    waves of `occupancy` programs a multiprocessor, mm_tail_split_candidates) the tiles
    of the full waves, so that only a part-filled last wave is split; else none (every
    tile split)."""
    if len(forced) < 2:
        return 0
    slots = forced[1] * (spec("multiprocessors") or 1)
    return tiles - tiles % slots if tiles > slots else 0


def _split_k(tiles, K, Bt):
    """Splits of K for one matrix whose output tiles would leave most of the GPU idle
    (a weight gradient: M x N small, K = the tokens): the driver's choice, 1 = none."""
    if Bt != 1 or tiles > ARRIVALS:
        return 1
    return spec("mm_split_k", tiles, K) or 1


def _check_dtype(dtype):
    if not dtype.is_floating_point:
        raise NotImplementedError(f"torch_ext: matrix products of {dtype} are not supported")


def as3(t, shape=None):
    """(t, sizes, strides) of t seen as a batch of matrices: a matrix is a batch of one
    (as t.unsqueeze(0)); with `shape`, t broadcast to it (a bias: stride 0 where
    expanded). Sizes and strides through _symbolic, so that mm, bmm, addmm and baddbmm
    replay for every size of a shape class."""
    if shape is not None:
        st = expand_strides(t, shape) if t.dim() == 3 else (0, *expand_strides(t, shape[1:]))
        return (t, tuple(shape), st)
    size, st = sizes(t), strides(t)
    if t.dim() == 2:  # one batch: its stride is never used (0 keeps it out of the guards)
        return (t, (1, *size), (0, *st))
    return (t, size, st)


def _bmm(a, b, c, bias=None, alpha=1.0, beta=0.0):
    """c[i] = alpha * a[i] @ b[i] + beta * bias[i]; 3-d operands, any strides. Each of
    a, b, c, bias: a 3-d tensor, or (tensor, sizes, strides) from as3."""
    (a, a_shape, a_st), (b, b_shape, b_st), (c, c_shape, c_st) = (
        x if isinstance(x, tuple) else as3(x) for x in (a, b, c)
    )
    if bias is not None and not isinstance(bias, tuple):
        bias = as3(bias)
    _check_dtype(a.dtype)
    Bt, M, K = a_shape
    N = b_shape[2]
    if math.prod(c_shape) == 0:
        return
    if K == 0 and bias is None:
        from .copy import fill_

        fill_(c, 0)
        return
    # "n" (rows contiguous) or "t" (columns contiguous) per operand, as BLAS says: a
    # Linear's forward x @ W.t() is "nt", its input gradient "nn", its weight's "tn".
    layout = ("n" if a_st[2] == 1 else "t") + ("n" if b_st[2] == 1 else "t")
    first = spec("mm_config", M, N, K, a.dtype, layout) or _default_config(M, N, K, a.dtype)
    acc = tl_float_acc(a.dtype)
    # A driver whose tl.dot lacks a dtype (the interpreter: bfloat16) gets fp32 tiles.
    upcast = bool(spec("dot_needs_fp32_inputs", a.dtype))
    precision = matmul_precision(a.dtype, upcast)
    has_bias = bias is not None and beta != 0
    x, _, x_st = bias if has_bias else (c, c_shape, c_st)
    from . import matmul_tma, matmul_ws  # (they import this module's epilogue)

    tma = ws_ops = None  # the TMA kernels' operand layouts, where their candidates are timed

    def run(cfg):
        if cfg[-1] == matmul_ws.WS:
            return matmul_ws.run(a, b, c, M, N, K, cfg, ws_ops, alpha)
        if cfg[-1] == matmul_tma.TMA:
            return matmul_tma.run(
                a, b, c, x, cfg, (a_shape, b_shape, c_shape), (c_st, x_st), tma, alpha, beta,
                has_bias, upcast, precision,
            )  # fmt: skip
        bn2, cfg = (cfg[-2], cfg[:-2]) if cfg[-1] == WIDE else (0, cfg)
        _, _, bk, warps, stages, *forced = cfg
        bm, bn, tiles = tiles_of(M, N, cfg, bn2)
        bk = max(16, pow2_at_most(max(K, 1), bk))
        counters = tiles * (2 if bn2 else 1)  # a wide tile counts its two blocks apart
        # a candidate's own split count (mm_candidates), else the driver's rule
        if counters > ARRIVALS:
            split = 1
        else:
            split = forced[0] if forced and Bt == 1 else _split_k(tiles, K, Bt)
        dp = _whole_tiles(tiles, forced) if split > 1 else 0
        if dp == tiles:
            split, dp = 1, 0
        if split > 1:
            ws = empty((split * (tiles - dp) * bm * (bn + bn2),), float_acc(a.dtype), a.device)
            arrivals = arrival_counters("split_k", a.device)
        else:
            ws, arrivals = c, c
        launch(
            _mm_kernel, (dp + (tiles - dp) * split, Bt), a, b, c, x, ws, arrivals, M, N, K,
            *a_st, *b_st, *c_st, *x_st, alpha, beta, dp,
            HAS_BIAS=has_bias, ACC=acc, PRECISION=precision, UPCAST=upcast,
            # every split's run of K is a whole number of BLOCK_K steps (the kernel's
            # `per`), so whole steps need no mask whatever the split count
            EVEN_K=K % bk == 0, SPLIT=split, GROUP_M=8,
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, BLOCK_N2=bn2, num_warps=warps,
            num_stages=stages,
        )  # fmt: skip

    cands = mm_candidates(first, M, N, K, a.dtype, Bt)
    if has_bias and x.untyped_storage().data_ptr() == c.untyped_storage().data_ptr():
        cands = [first]  # c += a @ b in place (addmm_): a timing launch would add twice
    if c.dtype != a.dtype:  # out_dtype products (matmul_dtype.py): the plain kernel
        cands = [first]
    if len(cands) > 1:
        # (only here: its stride tests become a launch plan's guards)
        tma = matmul_tma.layout(a, a_shape, a_st, b, b_shape, b_st, a.dtype)
        cands += matmul_tma.CANDIDATES if tma is not None else []
        ws_ops = matmul_ws.operands(a, b, c, tma, c_shape, c_st, Bt, has_bias)
        cands += matmul_ws.candidates(M, N, K) if ws_ops is not None else []
        # size buckets: a decision on each size's bucket, not its value, so that a
        # launch plan still serves every size of the bucket
        key = (a.dtype, layout, precision, Bt > 1, has_bias, tma is not None, ws_ops is not None,
               *(size_bucket(v) for v in (M, N, K)))  # fmt: skip
        run(tuned("mm", key, cands, run, a.device))
    else:
        run(first)


def matmul_precision(dtype, upcast=False):
    """tl.dot's input_precision for a float matrix product: float32 follows PyTorch's TF32
    setting for matmuls (tf32_allowed), float64 and fp32 tiles of an upcasting driver take
    ieee; fp16/bf16 need none."""
    if dtype == torch.float32 and not upcast:
        return "tf32" if tf32_allowed("matmul") else "ieee"
    if dtype in (torch.float32, torch.float64) or upcast:
        return "ieee"
    return None


def _default_config(M, N, K, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for compiled Triton."""
    if dtype in (torch.float16, torch.bfloat16) and M >= 128 and N >= 128:
        return 128, 128, 64, 8, 3
    if dtype == torch.float64:
        return 32, 32, 16, 4, 2
    return 64, 64, 32, 4, 3


@kernel("mm", shapes=True)
def mm_out(self: torch.Tensor, mat2: torch.Tensor, out: torch.Tensor) -> None:
    if self.dtype != mat2.dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{scalar_name(self.dtype, True)} != {scalar_name(mat2.dtype, True)}"
        )
    _bmm_any(as3(self), as3(mat2), as3(out))


@kernel("bmm", shapes=True)
def bmm_out(self: torch.Tensor, mat2: torch.Tensor, out: torch.Tensor) -> None:
    if self.dtype != mat2.dtype:
        raise RuntimeError(
            f"expected scalar type {scalar_name(self.dtype)} but found {scalar_name(mat2.dtype)}"
        )
    _bmm_any(as3(self), as3(mat2), as3(out))


def _bmm_any(a, b, out):
    """(as3's triples) Real products run the kernels; complex ones their parts'
    (ops/complex.py), on the tensors as batches."""
    if out[0].is_complex():
        from .complex import complex_bmm

        return complex_bmm(a[0], b[0], out[0])
    _bmm(a, b, out)


@kernel("addmm", shapes=True)
def addmm_out(
    self: torch.Tensor,
    mat1: torch.Tensor,
    mat2: torch.Tensor,
    beta: Scalar,
    alpha: Scalar,
    out: torch.Tensor,
) -> None:
    if out.is_complex():
        from .complex import complex_addbmm

        return complex_addbmm(self, mat1, mat2, beta, alpha, out)
    shape = (1, sizes(mat1)[0], sizes(mat2)[1])
    if (
        beta != 0
        and out.data_ptr() == self.data_ptr()
        and numel(self) > 0
        and strides(self) == strides(out)
        and sizes(self) == sizes(out)
    ):
        bias = as3(out)  # in-place addmm_: each element reads its own bias first
    else:
        bias = as3(self, shape)
    _bmm(as3(mat1), as3(mat2), as3(out), bias, alpha, beta)


@kernel("baddbmm", shapes=True)
def baddbmm_out(
    self: torch.Tensor,
    batch1: torch.Tensor,
    batch2: torch.Tensor,
    beta: Scalar,
    alpha: Scalar,
    out: torch.Tensor,
) -> None:
    if out.is_complex():
        from .complex import complex_addbmm

        return complex_addbmm(self, batch1, batch2, beta, alpha, out)
    shape = (sizes(batch1)[0], sizes(batch1)[1], sizes(batch2)[2])
    _bmm(as3(batch1), as3(batch2), as3(out), as3(self, shape), alpha, beta)


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
    if self.dim() != 1 or tensor.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {self.dim()}D and {tensor.dim()}D tensors"
        )
    if self.dtype != tensor.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{scalar_name(self.dtype)} and {scalar_name(tensor.dtype)}"
        )
    if self.numel() != tensor.numel():
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{self.numel()}] and src "
            f"[{tensor.numel()}] to have the same number of elements, but got "
            f"{self.numel()} and {tensor.numel()} elements respectively"
        )
    out = torch.empty((), dtype=self.dtype, device=self.device)
    _bmm(self.view(1, 1, -1), tensor.view(1, -1, 1), out.view(1, 1, 1))
    return out


def mm(self, mat2):
    out = torch.empty((self.shape[0], mat2.shape[1]), dtype=self.dtype, device=self.device)
    mm_out(self, mat2, out)
    return out
