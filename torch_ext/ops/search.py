"""Searching and counting: searchsorted, bucketize, bincount, histc, nonzero_static
(unique: ops/unique.py)."""

import builtins
import math
import torch
import triton
import triton.language as tl

from ._launch import cdiv, launch, next_pow2
from ._common import alert_not_deterministic, contiguous, f64_from_words, f64_words
from ._declare import Scalar, kernel
from ._common import write_result

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
    seq_c = contiguous(seq if seq.dtype == common else seq.to(common))
    vals = contiguous(values if values.dtype == common else values.to(common))
    out = torch.empty(
        values.shape, dtype=torch.int32 if out_int32 else torch.long, device=values.device
    )
    n = vals.numel()
    M = seq.shape[-1]
    if n == 0:
        return out
    srt = contiguous(sorter) if sorter is not None else seq_c
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
def searchsorted(
    sorted_sequence: torch.Tensor,
    self: torch.Tensor | Scalar,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: torch.Tensor | None = None,
) -> torch.Tensor:
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
def searchsorted_out(
    sorted_sequence: torch.Tensor,
    self: torch.Tensor | Scalar,
    out_int32: bool,
    right: bool,
    side: str | None,
    sorter: torch.Tensor | None,
    out: torch.Tensor,
) -> torch.Tensor:
    write_result(out, searchsorted(sorted_sequence, self, out_int32, right, side, sorter))
    return out


@kernel()
def bucketize(
    self: torch.Tensor | Scalar,
    boundaries: torch.Tensor,
    out_int32: bool = False,
    right: bool = False,
) -> torch.Tensor:
    """bucketize.Tensor / .Scalar: searchsorted over 1-d boundaries."""
    if boundaries.dim() != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})"
        )
    if not isinstance(self, torch.Tensor):
        self = torch.tensor(self, device=boundaries.device)
    return _search(boundaries, self, out_int32, right, None, None, "bucketize")


@kernel()
def bucketize_out(
    self: torch.Tensor, boundaries: torch.Tensor, out_int32: bool, right: bool, out: torch.Tensor
) -> torch.Tensor:
    write_result(out, bucketize(self, boundaries, out_int32, right))
    return out


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
def bincount(
    self: torch.Tensor, weights: torch.Tensor | None = None, minlength: int = 0
) -> torch.Tensor:
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
        alert_not_deterministic("_bincount_privateuseone")  # sums of weights, in any order
        dtype = torch.float32 if weights.dtype == torch.float32 else torch.float64
        acc_type = dtype
    acc = torch.zeros(size, dtype=acc_type, device=self.device)
    if n:
        x = contiguous(self)
        w = (
            contiguous(weights if weights is None or weights.dtype == dtype else weights.to(dtype))
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


@triton.jit(do_not_specialize=["lo_hi", "lo_lo", "hi_hi", "hi_lo"])
def _histc_kernel(x, out, n, lo_hi, lo_lo, hi_hi, hi_lo, bins, BLOCK: tl.constexpr):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < n
    lo = f64_from_words(lo_hi, lo_lo)  # the range exactly (f64_words)
    hi = f64_from_words(hi_hi, hi_lo)
    v = tl.load(x + e, mask=mask, other=0).to(tl.float64)
    inside = mask & (v >= lo) & (v <= hi)
    b = ((v - lo) * bins / (hi - lo)).to(tl.int64)
    b = tl.minimum(tl.maximum(b, 0), bins - 1)  # v == hi goes to the last bin
    tl.atomic_add(out + b, tl.full((BLOCK,), 1.0, tl.float32), mask=inside)


@kernel()
def histc_out(
    self: torch.Tensor, bins: int, min: Scalar, max: Scalar, out: torch.Tensor
) -> torch.Tensor:
    """histc.out(self, bins, min, max, out): `bins` equal-width bins over
    [min, max] (the data's range when min == max); elements outside are ignored.
    Integer inputs are counted too, as on CUDA (the CPU takes floats only), with the
    bounds truncated to the input's type; Hugging Face's MoE routing relies on it."""
    if self.dtype == torch.bool or self.dtype.is_complex:
        raise RuntimeError(
            f"torch.histc: input tensor must be a real number type, got {self.dtype}"
        )
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if not self.dtype.is_floating_point:
        lo, hi = float(int(lo)), float(int(hi))
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
            _histc_kernel, (cdiv(n, block),), contiguous(self), acc, n,
            *f64_words(lo), *f64_words(hi), bins, BLOCK=block,
        )  # fmt: skip
    write_result(out, acc.to(self.dtype))
    return out


@kernel()
def histc(self: torch.Tensor, bins: int = 100, min: Scalar = 0, max: Scalar = 0) -> torch.Tensor:
    out = torch.empty(0, dtype=self.dtype, device=self.device)
    return histc_out(self, bins, min, max, out)


@kernel()
def nonzero_static(
    self: torch.Tensor,
    size: int,
    fill_value: int = -1,
) -> torch.Tensor:
    """nonzero_static(self, *, size, fill_value): nonzero's first `size` rows, padded
    with fill_value to exactly `size` rows (a shape known without looking at the data,
    for export and CUDA graphs; here nonzero itself syncs for the count)."""
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    from .advanced_index import nonzero

    out = torch.full((size, self.dim()), fill_value, dtype=torch.int64, device=self.device)
    if size and self.dim():
        nz = nonzero(self)
        k = min(size, nz.shape[0])
        if k:
            out[:k].copy_(nz[:k])
    return out


@kernel()
def nonzero_static_out(
    self: torch.Tensor,
    size: int,
    fill_value: int,
    out: torch.Tensor,
) -> torch.Tensor:
    res = nonzero_static(self, size, fill_value)
    out.resize_(res.shape)
    out.copy_(res)
    return out
