"""Selection, counting and searching: median, nanmedian, kthvalue, mode,
cummax/cummin, logcumsumexp, searchsorted/bucketize, bincount, histc, unique,
take, index_fill, masked_scatter, count_nonzero, trace, equal, aminmax, isin,
linalg_cross.

Order statistics come from our sort (NaN sorts last, as in PyTorch), picked
per row on the device (no host round trip for the position); the scans are one
Triton kernel over (A, R, B) with a carry between blocks of R, like cumsum;
the searches are a branch-free binary search, one lane per value.
"""

import builtins
import math

import torch
import triton
import triton.language as tl

from . import _math
from ._launch import cdiv, launch, next_pow2
from .copy import copy_kernel
from .reduction import _TL, _blocks, _contiguous, acc_dtype, as_arb
from ._common import kernel


def _dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _reduced_shape(shape, d, keepdim):
    shape = list(shape)
    if not shape:
        return []
    if keepdim:
        shape[d] = 1
    else:
        del shape[d]
    return shape


def _write(out, value):
    """Copies `value` into the out= tensor `out`, resized to value's shape."""
    if list(out.shape) != list(value.shape):
        out.resize_(value.shape)
    copy_kernel((out,), (value,))


# -- order statistics --------------------------------------------------------


def _pick(self, dim, keepdim, values, indices, position, name):
    """values/indices[...] = the element at sorted position `position(n, nan_count)`
    along dim (a (.., 1, ..) int64 tensor of positions)."""
    if self.dim() == 0:
        _dim(dim, 0)
        _write(values, self)
        _write(indices, torch.zeros([], dtype=torch.long, device=self.device))
        return values, indices
    d = _dim(dim, self.dim())
    n = self.shape[d]
    if n == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    s, si = torch.sort(self, dim=d)
    nan_count = None
    if self.dtype.is_floating_point:
        nan_count = torch.isnan(self).sum(d, keepdim=True)
    k = position(n, nan_count, s, d)
    v = torch.gather(s, d, k)
    i = torch.gather(si, d, k)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    _write(values, v)
    _write(indices, i)
    return values, indices


def _const_position(self, d, k):
    shape = list(self.shape)
    shape[d] = 1
    return torch.full(shape, k, dtype=torch.long, device=self.device)


def _median_position(n, nan_count, s, d):
    k = _const_position(s, d, (n - 1) // 2)
    if nan_count is not None:  # any NaN: the result is NaN (the last sorted element)
        k = torch.where(nan_count > 0, torch.full_like(k, n - 1), k)
    return k


def _nanmedian_position(n, nan_count, s, d):
    if nan_count is None:
        return _median_position(n, None, s, d)
    return torch.clamp_min(torch.div(n - nan_count - 1, 2, rounding_mode="floor"), 0)


@kernel("median_dim")
def median_dim_values(self, dim, keepdim, values, indices):
    """median.dim_values(self, dim, keepdim, values, indices)."""
    return _pick(self, dim, keepdim, values, indices, _median_position, "median")


@kernel("nanmedian_dim")
def nanmedian_dim_values(self, dim, keepdim, values, indices):
    return _pick(self, dim, keepdim, values, indices, _nanmedian_position, "nanmedian")


def _median_all(self, position, name):
    if self.numel() == 0:
        return torch.full([], float("nan"), dtype=self.dtype, device=self.device)
    values = torch.empty([], dtype=self.dtype, device=self.device)
    indices = torch.empty([], dtype=torch.long, device=self.device)
    _pick(self.reshape(-1), 0, False, values, indices, position, name)
    return values


@kernel("median_all")
def median(self):
    """median(self) -> Tensor: the lower median of all elements, NaN if any is."""
    return _median_all(self, _median_position, "median")


@kernel("nanmedian_all")
def nanmedian(self):
    return _median_all(self, _nanmedian_position, "nanmedian")


@kernel("kthvalue")
def kthvalue_values(self, k, dim, keepdim, values, indices):
    """kthvalue.values(self, k, dim, keepdim, values, indices): k-th smallest (1-based)."""
    n = self.shape[_dim(dim, self.dim())] if self.dim() else 1
    if not 1 <= k <= n:
        raise IndexError(
            f"kthvalue(): selected number k out of range for dimension {dim}: k = {k}, size = {n}"
        )
    return _pick(
        self,
        dim,
        keepdim,
        values,
        indices,
        lambda n, nan_count, s, d: _const_position(s, d, k - 1),
        "kthvalue",
    )


@kernel()
def mode_values(self, dim, keepdim, values, indices):
    """mode.values(self, dim, keepdim, values, indices): the most frequent value
    along dim (the smallest of equally frequent ones) and an index of it."""
    d = _dim(dim, self.dim())
    if self.dim() and self.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    shape = _reduced_shape(self.shape, d, keepdim)
    if self.dim() == 0:
        _write(values, self)
        _write(indices, torch.zeros([], dtype=torch.long, device=self.device))
        return values, indices
    n = self.shape[d]
    s, si = torch.sort(self.movedim(d, -1).contiguous(), dim=-1)
    pos = torch.arange(n, device=self.device).expand_as(s)
    first = torch.ones_like(s, dtype=torch.bool)
    if n > 1:
        first[..., 1:] = s[..., 1:] != s[..., :-1]
    # Length of the run of equal values ending at each position; the first
    # longest run ends at its argmax (argmax keeps the first of equal maxima).
    start = torch.cummax(torch.where(first, pos, torch.zeros_like(pos)), -1).values
    end = torch.argmax(pos - start, -1, keepdim=True)
    v = torch.gather(s, -1, end).squeeze(-1)
    i = torch.gather(si, -1, end).squeeze(-1)
    _write(values, v.reshape(shape))
    _write(indices, i.reshape(shape))
    return values, indices


@kernel()
def mode(self, dim=-1, keepdim=False):
    values = torch.empty(0, dtype=self.dtype, device=self.device)
    indices = torch.empty(0, dtype=torch.long, device=self.device)
    return mode_values(self, dim, keepdim, values, indices)


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
    x = _contiguous(self)
    if x.dim() == 0:
        x = x.reshape(1)
    d = _dim(dim, self.dim())
    return as_arb(x, [d])


def _cum_ext(self, dim, values, indices, is_max):
    for t in (values, indices):
        if list(t.shape) != list(self.shape):
            t.resize_(self.shape)
    if self.numel() == 0:
        return
    xv, A, R, B = _scan_layout(self, dim)
    O = A * B
    acc = _TL[acc_dtype(self.dtype)]
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
    bo, br = _blocks(O, R, B)
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
def cummax_helper(self, values, indices, dim):
    """_cummax_helper(self, values, indices, dim): running max and the index of
    its last occurrence; NaN propagates."""
    _cum_ext(self, dim, values, indices, True)


@kernel()
def cummin_helper(self, values, indices, dim):
    _cum_ext(self, dim, values, indices, False)


@kernel()
def logcumsumexp_out(self, dim, out):
    """_logcumsumexp.out(self, dim, out)."""
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"torch_ext: logcumsumexp is not supported for {self.dtype}")
    if list(out.shape) != list(self.shape):
        out.resize_(self.shape)
    if self.numel() == 0:
        return out
    xv, A, R, B = _scan_layout(self, dim)
    O = A * B
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    bo, br = _blocks(O, R, B)
    launch(
        _logcumsumexp_kernel,
        (cdiv(O, bo),),
        xv,
        target,
        O,
        R,
        B,
        ACC=_TL[acc_dtype(self.dtype)],
        BLOCK_O=bo,
        BLOCK_R=br,
    )
    if target is not out:
        copy_kernel((out,), (target,))
    return out


@kernel()
def logcumsumexp(self, dim):
    out = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    return logcumsumexp_out(self, dim, out)


# -- binary search: searchsorted / bucketize ---------------------------------


@triton.jit
def _search_kernel(
    seq,
    sorter,
    vals,
    out,
    n,
    N,
    M,
    STEPS,
    ROWWISE: tl.constexpr,
    RIGHT: tl.constexpr,
    SORTER: tl.constexpr,
    UPCAST: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # out[e] = first position p in row of seq (M long) where seq[p] > v (RIGHT)
    # or seq[p] >= v; M when there is none.  Same comparisons as PyTorch's
    # kernels, so NaN lands where it does there.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < n
    v = tl.load(vals + e, mask=mask, other=0)
    if UPCAST:  # fp16/bf16 compare as float32
        v = v.to(tl.float32)
    if ROWWISE:
        row = (e // N) * M
    else:
        row = e * 0
    lo = tl.zeros((BLOCK,), tl.int64)
    hi = tl.zeros((BLOCK,), tl.int64) + M
    for _ in range(STEPS):
        active = mask & (lo < hi)
        mid = lo + (hi - lo) // 2
        pos = row + tl.where(active, mid, 0)
        if SORTER:
            pos = row + tl.load(sorter + pos, mask=active, other=0)
        m = tl.load(seq + pos, mask=active, other=0)
        if UPCAST:
            m = m.to(tl.float32)
        if RIGHT:
            left = m > v
        else:
            left = m >= v
        hi = tl.where(active & left, mid, hi)
        lo = tl.where(active & (left == 0), mid + 1, lo)
    tl.store(out + e, lo.to(out.dtype.element_ty), mask=mask)


def _search(seq, values, out_int32, right, side, sorter, name):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.{name}(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(
                f"torch.{name}(): side and right can't be set to opposites, got side "
                f"of left while right was True"
            )
        right = side == "right"
    if seq.dim() == 0:
        raise RuntimeError(
            f"torch.{name}(): boundaries tensor should have positive dimension, but got 0 dimension"
        )
    if seq.dim() != 1 and (
        values.dim() != seq.dim() or list(values.shape[:-1]) != list(seq.shape[:-1])
    ):
        raise RuntimeError(
            f"torch.{name}(): boundaries tensor should be 1 dimension or the first N-1 "
            f"dimensions of boundaries tensor and input value tensor must match, but we "
            f"got boundaries tensor {list(seq.shape)} and input value tensor "
            f"{list(values.shape)}"
        )
    if sorter is not None:
        if sorter.device != seq.device:
            raise RuntimeError(f"torch.{name}(): sorter and boundaries must be on the same device")
        if list(sorter.shape) != list(seq.shape):
            raise RuntimeError(
                f"torch.{name}(): boundary and sorter must have the same size, but got "
                f"boundary tensor {list(seq.shape)} and got sorter tensor "
                f"{list(sorter.shape)}"
            )
        if sorter.dtype != torch.long:
            raise RuntimeError(
                f"torch.{name}(): sorter must be a tensor of long dtype but got "
                f"dtype {sorter.dtype}"
            )
    common = torch.result_type(seq, values)
    seq_c = _contiguous(seq if seq.dtype == common else seq.to(common))
    vals = _contiguous(values if values.dtype == common else values.to(common))
    out = torch.empty(
        values.shape, dtype=torch.int32 if out_int32 else torch.long, device=values.device
    )
    n = vals.numel()
    M = seq.shape[-1]
    if n == 0:
        return out
    srt = _contiguous(sorter) if sorter is not None else seq_c
    block = min(1024, next_pow2(n))
    launch(
        _search_kernel,
        (cdiv(n, block),),
        seq_c,
        srt,
        vals,
        out,
        n,
        vals.shape[-1] if vals.dim() else 1,
        M,
        max(1, M.bit_length()),
        ROWWISE=seq.dim() > 1,
        RIGHT=bool(right),
        SORTER=sorter is not None,
        UPCAST=common in (torch.float16, torch.bfloat16),
        BLOCK=block,
    )
    return out


@kernel()
def searchsorted(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted.Tensor / .Scalar (a Scalar `self` becomes a 0-d tensor)."""
    if not isinstance(self, torch.Tensor):
        if sorted_sequence.dim() != 1:
            raise RuntimeError(
                "torch.searchsorted(): input value can be a scalar only when "
                f"boundaries tensor dimension is 1, but we got boundaries tensor "
                f"dim({sorted_sequence.dim()}) and input value's dim(0) numel(1)"
            )
        self = torch.tensor(self, device=sorted_sequence.device)
    return _search(sorted_sequence, self, out_int32, right, side, sorter, "searchsorted")


@kernel()
def searchsorted_out(sorted_sequence, self, out_int32, right, side, sorter, out):
    _write(out, searchsorted(sorted_sequence, self, out_int32, right, side, sorter))
    return out


@kernel()
def bucketize(self, boundaries, out_int32=False, right=False):
    """bucketize.Tensor / .Scalar: searchsorted over 1-d boundaries."""
    if boundaries.dim() != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})"
        )
    if not isinstance(self, torch.Tensor):
        self = torch.tensor(self, device=boundaries.device)
    return _search(boundaries, self, out_int32, right, None, None, "bucketize")


@kernel()
def bucketize_out(self, boundaries, out_int32, right, out):
    _write(out, bucketize(self, boundaries, out_int32, right))
    return out


@kernel()
def repeat_interleave(repeats, output_size=None):
    """repeat_interleave.Tensor(repeats, output_size?): i repeated repeats[i] times."""
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype not in (torch.long, torch.int32):
        raise RuntimeError("repeats has to be Long or Int tensor")
    if repeats.numel() and int(torch.amin(repeats).item()) < 0:
        raise RuntimeError("repeats can not be negative")
    cum = torch.cumsum(repeats, 0)
    total = int(cum[-1].item()) if repeats.numel() else 0
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    positions = torch.arange(total, device=repeats.device, dtype=cum.dtype)
    return _search(
        cum, positions, repeats.dtype == torch.int32, True, None, None, "repeat_interleave"
    )


# -- counting: bincount / histc -----------------------------------------------


@triton.jit
def _bincount_kernel(x, w, out, n, HAS_W: tl.constexpr, BLOCK: tl.constexpr):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < n
    b = tl.load(x + e, mask=mask, other=0).to(tl.int64)
    if HAS_W:
        v = tl.load(w + e, mask=mask, other=0).to(out.dtype.element_ty)
    else:
        v = tl.full((BLOCK,), 1, out.dtype.element_ty)
    tl.atomic_add(out + b, v, mask=mask)


@kernel()
def bincount(self, weights=None, minlength=0):
    """bincount(self, weights?, minlength): counts (int64), or sums of weights
    (float32 for float32 weights, float64 otherwise, as on CPU)."""
    if (
        self.dim() != 1
        or self.dtype.is_floating_point
        or self.dtype in (torch.bool, torch.complex64)
    ):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != self.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    n = self.numel()
    size = minlength
    if n:
        lo, hi = torch.aminmax(self)
        if int(lo.item()) < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        size = max(size, int(hi.item()) + 1)
    if weights is None:
        acc_type, dtype = torch.int32, torch.long
    else:
        dtype = torch.float32 if weights.dtype == torch.float32 else torch.float64
        acc_type = dtype
    acc = torch.zeros(size, dtype=acc_type, device=self.device)
    if n:
        x = _contiguous(self)
        w = (
            _contiguous(weights if weights is None or weights.dtype == dtype else weights.to(dtype))
            if weights is not None
            else x
        )
        block = min(1024, next_pow2(n))
        launch(
            _bincount_kernel,
            (cdiv(n, block),),
            x,
            w,
            acc,
            n,
            HAS_W=weights is not None,
            BLOCK=block,
        )
    return acc if acc.dtype == dtype else acc.to(dtype)


@triton.jit
def _histc_kernel(x, out, n, lo, hi, bins, BLOCK: tl.constexpr):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < n
    v = tl.load(x + e, mask=mask, other=0).to(tl.float64)
    inside = mask & (v >= lo) & (v <= hi)
    b = ((v - lo) * bins / (hi - lo)).to(tl.int64)
    b = tl.minimum(tl.maximum(b, 0), bins - 1)  # v == hi goes to the last bin
    tl.atomic_add(out + b, tl.full((BLOCK,), 1.0, tl.float32), mask=inside)


@kernel()
def histc_out(self, bins, min, max, out):
    """histc.out(self, bins, min, max, out): `bins` equal-width bins over
    [min, max] (the data's range when min == max); elements outside are ignored."""
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"torch.histc: input tensor must be floating point, got {self.dtype}")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and self.numel():
        mn, mx = torch.aminmax(self)
        lo, hi = float(mn.item()), float(mx.item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    acc = torch.zeros(bins, dtype=torch.float32, device=self.device)
    n = self.numel()
    if n:
        block = builtins.min(1024, next_pow2(n))
        launch(
            _histc_kernel, (cdiv(n, block),), _contiguous(self), acc, n, lo, hi, bins, BLOCK=block
        )
    _write(out, acc.to(self.dtype))
    return out


@kernel()
def histc(self, bins=100, min=0, max=0):
    out = torch.empty(0, dtype=self.dtype, device=self.device)
    return histc_out(self, bins, min, max, out)


# -- unique ------------------------------------------------------------------


def _runs(s):
    """For a 1-d tensor s: (first-of-run mask, run id of every element)."""
    first = torch.ones(s.shape, dtype=torch.bool, device=s.device)
    if s.numel() > 1:
        first[1:] = s[1:] != s[:-1]
    return first, torch.cumsum(first, 0) - 1


def _counts(first, n):
    starts = torch.nonzero(first).reshape(-1)
    ends = torch.cat([starts[1:], torch.full([1], n, dtype=torch.long, device=first.device)])
    return ends - starts


def _empty_long(device):
    return torch.empty(0, dtype=torch.long, device=device)


def _unique(self, return_inverse, return_counts, sort):
    """(values, inverse, counts) of the runs of equal neighbours of the
    flattened tensor, sorted first when `sort`; the inverse and counts are
    empty unless asked for (as PyTorch returns them)."""
    flat = self.reshape(-1)
    n = flat.numel()
    dev = self.device
    if n == 0:
        inv = (
            torch.empty(self.shape, dtype=torch.long, device=dev)
            if return_inverse
            else _empty_long(dev)
        )
        return flat.clone(), inv, _empty_long(dev)
    s, perm = torch.sort(flat) if sort else (flat, None)
    first, group = _runs(s)
    values = torch.masked_select(s, first)
    inverse = _empty_long(dev)
    if return_inverse:
        if sort:  # group ids back in the input's order
            inverse = torch.empty(n, dtype=torch.long, device=dev).scatter_(0, perm, group)
        else:
            inverse = group
        inverse = inverse.reshape(self.shape)
    counts = _counts(first, n) if return_counts else _empty_long(dev)
    return values, inverse, counts


@kernel()
def unique2(self, sorted=True, return_inverse=False, return_counts=False):
    """_unique2(self, sorted, return_inverse, return_counts): the distinct values
    in ascending order (always sorted, as on CUDA), the position of each input
    element among them, and how often each occurs."""
    return _unique(self, return_inverse, return_counts, sort=True)


@kernel()
def unique(self, sorted=True, return_inverse=False):
    """_unique(self, sorted, return_inverse)."""
    values, inverse, _ = _unique(self, return_inverse, False, sort=True)
    return values, inverse


@kernel()
def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """unique_consecutive(self, return_inverse, return_counts, dim): collapses
    runs of equal neighbours (of the flattened tensor)."""
    if dim is not None:
        raise NotImplementedError(
            "torch_ext: unique_consecutive with dim= is not supported (only the flattened form)"
        )
    return _unique(self, return_inverse, return_counts, sort=False)


# -- indexing by flat position and masks ------------------------------------


def _check_index(index, size, what):
    if index.dtype not in (torch.long, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise IndexError(f"{what}: expected an integer index tensor, got {index.dtype}")
    if index.numel():
        lo, hi = torch.aminmax(index.reshape(-1))
        lo, hi = int(lo.item()), int(hi.item())
        bad = lo if lo < -size else (hi if hi >= size else None)
        if bad is not None:
            raise IndexError(f"{what}: index {bad} is out of bounds for size {size}")
    return torch.where(index < 0, index + size, index).to(torch.long)


@kernel()
def take(self, index):
    """take(self, index): self viewed as 1-d, read at `index` (negative wraps)."""
    idx = _check_index(index, self.numel(), "take")
    flat = self.reshape(-1)
    return torch.index_select(flat, 0, idx.reshape(-1)).reshape(index.shape)


@kernel()
def take_out(self, index, out):
    _write(out, take(self, index))
    return out


@kernel()
def put_(self, index, source, accumulate=False):
    """put_(self, index, source, accumulate): self viewed as 1-d, written at `index`."""
    if source.dtype != self.dtype:
        raise RuntimeError(
            f"put_(): self ({self.dtype}) and source ({source.dtype}) must have "
            f"the same scalar type"
        )
    if index.numel() != source.numel():
        raise RuntimeError(
            f"put_(): Expected source and index to have the same number of "
            f"elements, but got source.numel() = {source.numel()}, "
            f"index.numel() = {index.numel()}"
        )
    idx = _check_index(index, self.numel(), "put_").reshape(-1)
    target = self if self.is_contiguous() else self.contiguous()
    target.view(-1).index_put_((idx,), source.reshape(-1), accumulate)
    if target is not self:
        copy_kernel((self,), (target,))
    return self


@kernel()
def index_fill_(self, dim, index, value):
    """index_fill_.int_Scalar / .int_Tensor: self[..., index, ...] = value along dim."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise RuntimeError(
                f"index_fill_ only supports a 0-dimensional value tensor, but got "
                f"tensor with {value.dim()} dimension(s)."
            )
        value = value.item()
    if index.dim() > 1:
        raise IndexError("Index has to be a vector/scalar")
    d = _dim(dim, self.dim())
    size = self.shape[d] if self.dim() else 1
    idx = _check_index(index, size, "index_fill_").reshape(-1)
    if idx.numel() == 0:
        return self
    mask = torch.zeros(size, dtype=torch.bool, device=self.device)
    mask.index_put_((idx,), torch.ones([], dtype=torch.bool, device=self.device))
    shape = [1] * self.dim()
    if self.dim():
        shape[d] = size
    self.masked_fill_(mask.reshape(shape), value)
    return self


@kernel()
def masked_scatter_(self, mask, source):
    """masked_scatter_(self, mask, source): the True positions of mask
    (broadcast to self), in order, take source's leading elements."""
    if mask.dtype != torch.bool:
        raise RuntimeError(
            f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}"
        )
    if source.dtype != self.dtype:
        raise RuntimeError(
            f"masked_scatter_: expected self and source to have same dtypes but got "
            f"{self.dtype} and {source.dtype}"
        )
    m = mask.expand(self.shape)
    count = int(m.sum().item())
    if count > source.numel():
        raise RuntimeError("masked_scatter_: Number of elements of source < number of ones in mask")
    if count:
        self.index_put_((m,), source.reshape(-1)[:count])
    return self


# -- small reductions built from ours ----------------------------------------


@kernel()
def count_nonzero(self, dim):
    """count_nonzero.dim_IntList(self, dim[])."""
    return torch.sum(self != 0, dim=list(dim))


@kernel()
def trace(self):
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    return torch.sum(torch.diagonal(self))


@kernel()
def equal(self, other):
    """equal(self, other) -> bool: same shape and all elements equal."""
    if self.device != other.device:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two "
            f"devices, {self.device} and {other.device}!"
        )
    if list(self.shape) != list(other.shape):
        return False
    return bool(torch.all(self == other).item())


@kernel()
def aminmax_all(self, min, max):
    """aminmax_allreduce_stub(self, min, max)."""
    copy_kernel((min,), (torch.amin(self),))
    copy_kernel((max,), (torch.amax(self),))


@kernel()
def aminmax_dim(self, dim, keepdim, min, max):
    """aminmax_stub(self, dim, keepdim, min, max)."""
    copy_kernel((min,), (torch.amin(self, dim, keepdim),))
    copy_kernel((max,), (torch.amax(self, dim, keepdim),))


@kernel("isin")
def isin_out(elements, test_elements, assume_unique, invert, out):
    """isin.Tensor_Tensor_out impl: a broadcast comparison for few test elements,
    otherwise a binary search in the sorted test elements."""
    common = torch.result_type(elements, test_elements)
    e = elements.reshape(-1).to(common)
    t = test_elements.reshape(-1).to(common)
    if t.numel() == 0 or e.numel() == 0:
        found = torch.zeros(e.shape, dtype=torch.bool, device=e.device)
    elif e.numel() * t.numel() <= (1 << 20):
        found = torch.any(e[:, None] == t[None, :], dim=1)
    else:
        st = torch.sort(t).values
        pos = torch.clamp_max(_search(st, e, False, False, None, None, "isin"), st.numel() - 1)
        found = torch.index_select(st, 0, pos) == e
    if invert:
        found = torch.logical_not(found)
    _write(out, found.reshape(elements.shape))


@kernel()
def cross(result, a, b, dim):
    """cross_stub(result, a, b, dim): a and b broadcast to result's shape."""
    if a.dtype in (torch.float16, torch.bfloat16):  # one rounding, from float32
        a, b = a.float(), b.float()
    a0, a1, a2 = (a.select(dim, i) for i in range(3))
    b0, b1, b2 = (b.select(dim, i) for i in range(3))
    for i, v in enumerate((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)):
        copy_kernel((result.select(dim, i),), (v,))


def _tri_indices(row, col, offset, dtype, device, upper):
    if row < 0 or col < 0:
        raise RuntimeError(
            f"row must be non-negative, got{row}"
            if row < 0
            else f"col must be non-negative, got{col}"
        )
    r = torch.arange(row, dtype=torch.long, device=device).unsqueeze(1).expand(row, col)
    c = torch.arange(col, dtype=torch.long, device=device).unsqueeze(0).expand(row, col)
    keep = (c - r >= offset) if upper else (c - r <= offset)
    out = torch.stack([torch.masked_select(r, keep), torch.masked_select(c, keep)])
    return out if dtype in (None, torch.long) else out.to(dtype)


@kernel()
def triu_indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    """triu_indices(row, col, offset): (2, N) coordinates of the upper triangle, row-major."""
    return _tri_indices(row, col, offset, dtype, device, True)


@kernel()
def tril_indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    return _tri_indices(row, col, offset, dtype, device, False)
