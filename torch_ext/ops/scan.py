"""Scans: cumsum, cumprod, cummax, cummin, logcumsumexp."""

import torch
import triton
import triton.language as tl

from ._launch import cdiv, launch
from .copy import copy_kernel
from . import _math
from ._common import TL_DTYPES, reduce_blocks, contiguous, acc_dtype, as_arb
from ._declare import kernel
from .reduction import _cast, _mul
from ._common import wrap_dim

# -- cumsum ---------------------------------------------------------------


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _cumsum_kernel(
    x,
    out,
    O,
    R,
    B,
    ACC: tl.constexpr,
    PROD: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = o < O
    base = (o // B) * R * B + o % B
    if PROD:
        carry = tl.zeros((BLOCK_O,), ACC) + 1
    else:
        carry = tl.zeros((BLOCK_O,), ACC)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        m = (r < R)[:, None] & omask[None, :]
        offs = r[:, None] * B + base[None, :]
        if PROD:
            v = tl.load(x + offs, mask=m, other=1).to(ACC)
            c = tl.cumprod(v, 0) * carry[None, :]
            carry = carry * tl.reduce(v, 0, _mul)
        else:
            v = tl.load(x + offs, mask=m, other=0).to(ACC)
            c = tl.cumsum(v, 0) + carry[None, :]
            carry += tl.sum(v, 0)
        tl.store(out + offs, c.to(out.dtype.element_ty), mask=m)


def _scan_out(self, dim, dtype, out, prod):
    x = self if dtype is None or dtype == self.dtype else _cast(self, dtype)
    if x.dim() == 0:
        copy_kernel((out,), (x,))
        return
    d = dim % x.dim()
    xv, A, R, B = as_arb(x, [d])
    if xv is not x:
        raise AssertionError("cumsum: unexpected layout")
    O = A * B
    if O == 0 or R == 0:
        return
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    bo, br = reduce_blocks(O, R, B)
    launch(
        _cumsum_kernel,
        (cdiv(O, bo),),
        xv,
        target,
        O,
        R,
        B,
        ACC=TL_DTYPES[acc_dtype(x.dtype)],
        PROD=prod,
        BLOCK_O=bo,
        BLOCK_R=br,
    )
    if target is not out:
        copy_kernel((out,), (target,))


@kernel("cumsum")
def cumsum_out(self: torch.Tensor, dim: int, dtype: torch.dtype | None, out: torch.Tensor) -> None:
    """cumsum.out impl: (self, dim, dtype?, out)."""
    _scan_out(contiguous(self), dim, dtype, out, False)


@kernel("cumprod")
def cumprod_out(self: torch.Tensor, dim: int, dtype: torch.dtype | None, out: torch.Tensor) -> None:
    """cumprod.out impl: (self, dim, dtype?, out)."""
    _scan_out(contiguous(self), dim, dtype, out, True)


# -- scans with a carry: cummax / cummin / logcumsumexp -----------------------


@triton.jit
def _later_max(av, ai, bv, bi):
    # b comes after a: b wins on NaN, on a larger value, and on ties (the last index).
    take = (bv != bv) | ((av == av) & (bv >= av))
    return tl.where(take, bv, av), tl.where(take, bi, ai)


@triton.jit
def _later_min(av, ai, bv, bi):
    take = (bv != bv) | ((av == av) & (bv <= av))
    return tl.where(take, bv, av), tl.where(take, bi, ai)


@triton.jit
def _logaddexp(a, b):
    m = tl.where(a > b, a, b)
    lo = tl.where(a > b, b, a)
    r = m + _math.log1p(tl.exp(lo - m))
    r = tl.where(lo == float("-inf"), m, r)  # (-inf, -inf) and (x, -inf)
    r = tl.where(m == float("inf"), m, r)  # (inf, inf) would be inf - inf
    return tl.where((a != a) | (b != b), a + b, r)


@triton.jit
def _cum_ext_kernel(
    x,
    out,
    idx,
    O,
    R,
    B,
    MAX: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = o < O
    base = (o // B) * R * B + o % B
    carry_v = tl.zeros((BLOCK_O,), ACC)
    carry_i = tl.zeros((BLOCK_O,), tl.int64) - 1  # -1: nothing seen yet
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        m = (r < R)[:, None] & omask[None, :]
        offs = r[:, None] * B + base[None, :]
        v = tl.load(x + offs, mask=m, other=0).to(ACC)
        i = tl.zeros((BLOCK_R, BLOCK_O), tl.int64) + r[:, None]
        if MAX:
            sv, si = tl.associative_scan((v, i), 0, _later_max)
            cv, ci = _later_max(carry_v[None, :], carry_i[None, :], sv, si)
        else:
            sv, si = tl.associative_scan((v, i), 0, _later_min)
            cv, ci = _later_min(carry_v[None, :], carry_i[None, :], sv, si)
        has = carry_i[None, :] >= 0
        cv = tl.where(has, cv, sv)
        ci = tl.where(has, ci, si)
        tl.store(out + offs, cv.to(out.dtype.element_ty), mask=m)
        tl.store(idx + offs, ci, mask=m)
        last = tl.minimum(R - r0, BLOCK_R) - 1
        sel = (tl.arange(0, BLOCK_R) == last)[:, None]
        carry_v = tl.sum(tl.where(sel, cv, 0), 0).to(ACC)
        carry_i = tl.sum(tl.where(sel, ci, 0), 0)


@triton.jit
def _logcumsumexp_kernel(
    x, out, O, R, B, ACC: tl.constexpr, BLOCK_O: tl.constexpr, BLOCK_R: tl.constexpr
):
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = o < O
    base = (o // B) * R * B + o % B
    carry = tl.zeros((BLOCK_O,), ACC) + float("-inf")
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        m = (r < R)[:, None] & omask[None, :]
        offs = r[:, None] * B + base[None, :]
        v = tl.load(x + offs, mask=m, other=float("-inf")).to(ACC)
        c = _logaddexp(tl.associative_scan(v, 0, _logaddexp), carry[None, :])
        tl.store(out + offs, c.to(out.dtype.element_ty), mask=m)
        last = tl.minimum(R - r0, BLOCK_R) - 1
        carry = tl.max(tl.where((tl.arange(0, BLOCK_R) == last)[:, None], c, float("-inf")), 0)


def _scan_layout(self, dim):
    x = contiguous(self)
    if x.dim() == 0:
        x = x.reshape(1)
    d = wrap_dim(dim, self.dim())
    return as_arb(x, [d])


def _cum_ext(self, dim, values, indices, is_max):
    for t in (values, indices):
        if list(t.shape) != list(self.shape):
            t.resize_(self.shape)
    if self.numel() == 0:
        return
    xv, A, R, B = _scan_layout(self, dim)
    O = A * B
    acc = TL_DTYPES[acc_dtype(self.dtype)]
    tv = (
        values
        if values.is_contiguous()
        else torch.empty_like(values, memory_format=torch.contiguous_format)
    )
    ti = (
        indices
        if indices.is_contiguous()
        else torch.empty_like(indices, memory_format=torch.contiguous_format)
    )
    bo, br = reduce_blocks(O, R, B)
    launch(
        _cum_ext_kernel,
        (cdiv(O, bo),),
        xv,
        tv,
        ti,
        O,
        R,
        B,
        MAX=is_max,
        ACC=acc,
        BLOCK_O=bo,
        BLOCK_R=br,
    )
    if tv is not values:
        copy_kernel((values,), (tv,))
    if ti is not indices:
        copy_kernel((indices,), (ti,))


@kernel()
def cummax_helper(
    self: torch.Tensor, values: torch.Tensor, indices: torch.Tensor, dim: int
) -> None:
    """_cummax_helper(self, values, indices, dim): running max and the index of
    its last occurrence; NaN propagates."""
    _cum_ext(self, dim, values, indices, True)


@kernel()
def cummin_helper(
    self: torch.Tensor, values: torch.Tensor, indices: torch.Tensor, dim: int
) -> None:
    _cum_ext(self, dim, values, indices, False)


@kernel()
def logcumsumexp_out(self: torch.Tensor, dim: int, out: torch.Tensor) -> torch.Tensor:
    """_logcumsumexp.out(self, dim, out)."""
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"torch_ext: logcumsumexp is not supported for {self.dtype}")
    wrap_dim(dim, self.dim())  # checked before an empty tensor returns
    if list(out.shape) != list(self.shape):
        out.resize_(self.shape)
    if self.numel() == 0:
        return out
    xv, A, R, B = _scan_layout(self, dim)
    O = A * B
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    bo, br = reduce_blocks(O, R, B)
    launch(
        _logcumsumexp_kernel,
        (cdiv(O, bo),),
        xv,
        target,
        O,
        R,
        B,
        ACC=TL_DTYPES[acc_dtype(self.dtype)],
        BLOCK_O=bo,
        BLOCK_R=br,
    )
    if target is not out:
        copy_kernel((out,), (target,))
    return out


@kernel()
def logcumsumexp(self: torch.Tensor, dim: int) -> torch.Tensor:
    out = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    return logcumsumexp_out(self, dim, out)
