"""torch.histogram and torch.histogramdd (PyTorch's kernels for them are CPU-only):

  histogram.bin_ct(self, bins, range, weight, density)       -> (hist, bin_edges)
  histogram.bins_tensor(self, bins, weight, density)         -> (hist, bin_edges)
  _histogramdd_bin_edges(self, bins, range, weight, density) -> edges per dimension
  _histogramdd_from_bin_cts / _from_bin_tensors(...)         -> hist

One kernel finds every point's bin (one lane per point, a loop over its D
coordinates): equal-width bins by PyTorch's linear interpolation corrected by a
search of the neighbouring edges, given edges by binary search; the last edge is
inclusive and points outside the edges (or NaN) count nowhere (an extra slot). The
counts are then an index_add of the weights (ones without), so they are exact for
unweighted counts and deterministic where index_add is.
"""

import torch
import triton
import triton.language as tl

from ._common import block_for, contiguous, write_result
from ._declare import kernel
from ._launch import cdiv, launch


@triton.jit
def _bin_kernel(
    x, edges, eoff, ecnt, hstride, pos_out, N, D, TRASH,
    UNIFORM: tl.constexpr, STEPS: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = i < N
    flat = tl.zeros((BLOCK,), tl.int64)
    keep = ok
    for d in range(0, D):
        e0 = tl.load(eoff + d)
        E = tl.load(ecnt + d)
        v = tl.load(x + i * D + d, mask=ok, other=0)
        left = tl.load(edges + e0)
        right = tl.load(edges + e0 + E - 1)
        inside = (v >= left) & (v <= right)
        if UNIFORM:
            p = ((v - left) * (E - 1).to(v.dtype) / (right - left)).to(tl.int64)
            p = tl.minimum(tl.maximum(p, 0), E - 1)
            lo = tl.maximum(p - 1, 0)
            hi = tl.minimum(p + 2, E)
            # upper_bound over edges[lo:hi]: lo + how many of them are <= v
            cnt = lo
            for k in range(0, 3):
                j = lo + k
                ek = tl.load(edges + e0 + j, mask=inside & (j < hi), other=0)
                cnt += (inside & (j < hi) & (ek <= v)).to(tl.int64)
            p = cnt - 1
        else:
            lo = tl.zeros((BLOCK,), tl.int64)
            hi = tl.zeros((BLOCK,), tl.int64) + E
            for _ in range(0, STEPS):
                mid = (lo + hi) // 2
                more = lo < hi
                em = tl.load(edges + e0 + mid, mask=inside & more, other=0)
                go = more & (em <= v)
                lo = tl.where(go, mid + 1, lo)
                hi = tl.where(more & ~go, mid, hi)
            p = lo - 1
        p = tl.where(p >= E - 1, E - 2, p)
        keep = keep & inside
        flat += p * tl.load(hstride + d)
    tl.store(pos_out + i, tl.where(keep, flat, TRASH), mask=ok)


def _check(self, weight, name):
    if self.dtype == torch.bfloat16:  # as on the CPU (counts are added in the input's type)
        raise NotImplementedError("\"histogramdd\" not implemented for 'BFloat16'")
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name}: input tensor and bins tensors should have the same dtype")
    if weight is not None:
        if weight.dtype != self.dtype:
            raise RuntimeError(f"{name}: if weight tensor is provided it should have the same dtype as the input tensor")  # fmt: skip
        if list(weight.shape) != list(self.shape[:-1]):
            raise RuntimeError(
                f"{name}: if weight tensor is provided it should have the same shape as the "
                "input tensor excluding its innermost dimension"
            )


def _histogramdd(points, edges, weight, density, uniform):
    """hist of points (N, D) over the edges (one 1-d tensor per dimension)."""
    D = len(edges)
    dev, dtype = points.device, points.dtype
    counts = [int(e.numel()) - 1 for e in edges]
    total = 1
    for c in counts:
        total *= c
    strides = [1] * D
    for d in range(D - 2, -1, -1):
        strides[d] = strides[d + 1] * counts[d + 1]
    flat = torch.zeros(total + 1, dtype=dtype, device=dev)
    N = points.shape[0]
    if N and total:
        cat = contiguous(torch.cat([e.reshape(-1) for e in edges]))
        offs, acc = [], 0
        for e in edges:
            offs.append(acc)
            acc += int(e.numel())
        meta = torch.tensor([offs, [c + 1 for c in counts], strides], dtype=torch.int64)
        meta = meta.to(dev)
        pos = torch.empty(N, dtype=torch.int64, device=dev)
        block = block_for(N)
        steps = max(max(counts) + 1, 2).bit_length()
        launch(
            _bin_kernel, (cdiv(N, block),),
            contiguous(points), cat, meta[0], meta[1], meta[2], pos, N, D, total,
            UNIFORM=uniform, STEPS=steps, BLOCK=block,
        )  # fmt: skip
        src = (
            contiguous(weight).reshape(-1)
            if weight is not None
            else torch.ones(N, dtype=dtype, device=dev)
        )
        flat.index_add_(0, pos, src)
    hist = flat[:total].reshape(counts)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * D
            shape[d] = counts[d]
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return hist


def _outer_edges(points, D, rng, name):
    """(leftmost, rightmost) per dimension: range, or the data's min and max."""
    if rng is not None:
        if len(rng) != 2 * D:
            raise RuntimeError(f"{name}: for a {D}-dimensional histogram range should have {2 * D} elements, but got {len(rng)}")  # fmt: skip
        pairs = [(float(rng[2 * d]), float(rng[2 * d + 1])) for d in range(D)]
    elif points.numel():
        lo = points.amin(0).cpu().tolist()
        hi = points.amax(0).cpu().tolist()
        pairs = list(zip(lo, hi))
    else:
        pairs = [(0.0, 0.0)] * D
    out = []
    for d, (lo, hi) in enumerate(pairs):
        if not (abs(lo) != float("inf") and abs(hi) != float("inf") and lo == lo and hi == hi):
            raise RuntimeError(f"{name}: dimension {d}'s range [{lo}, {hi}] is not finite")
        if lo > hi:
            raise RuntimeError(f"{name}: min should not exceed max, but got min {lo} max {hi} for dimension {d}")  # fmt: skip
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        out.append((lo, hi))
    return out


def _points(self):
    return self.reshape(-1, self.shape[-1]) if self.dim() else self.reshape(1, 1)


@kernel()
def histogramdd_bin_edges(
    self: torch.Tensor,
    bins: list[int],
    range: list[float] | None = None,
    weight: torch.Tensor | None = None,
    density: bool = False,
) -> list[torch.Tensor]:
    name = "torch.histogramdd"
    pts = _points(self)
    D = pts.shape[1]
    if len(bins) != D:
        raise RuntimeError(
            "histogramdd: The size of bins must be equal to the innermost dimension of the "
            f"input ({D}), but got {len(bins)}"
        )
    for b in bins:
        if b <= 0:
            raise RuntimeError(f"{name}: bins must be > 0, but got {b} for dimension")
    return [
        torch.linspace(lo, hi, int(b) + 1, dtype=self.dtype, device=self.device)
        for (lo, hi), b in zip(_outer_edges(pts, D, range, name), bins)
    ]


@kernel()
def histogramdd_from_bin_cts(
    self: torch.Tensor,
    bins: list[int],
    range: list[float] | None = None,
    weight: torch.Tensor | None = None,
    density: bool = False,
) -> torch.Tensor:
    _check(self, weight, "torch.histogramdd")
    edges = histogramdd_bin_edges(self, bins, range, weight, density)
    return _histogramdd(_points(self), edges, weight, density, True)


@kernel()
def histogramdd_from_bin_tensors(
    self: torch.Tensor,
    bins: list[torch.Tensor],
    weight: torch.Tensor | None = None,
    density: bool = False,
) -> torch.Tensor:
    _check(self, weight, "torch.histogramdd")
    for b in bins:
        if b.dtype != self.dtype:
            raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same dtype")  # fmt: skip
        if b.dim() != 1 or b.numel() < 1:
            raise RuntimeError("torch.histogramdd: bins tensor should have one dimension and at least 1 element")  # fmt: skip
    return _histogramdd(_points(self), list(bins), weight, density, False)


def _flat(self, weight):
    pts = self.reshape(-1, 1)
    w = weight.reshape(-1) if weight is not None else None
    if weight is not None and list(weight.shape) != list(self.shape):
        raise RuntimeError(
            "torch.histogram: if weight tensor is provided it should have the same shape as the input tensor"  # noqa: E501
        )
    return pts, w


@kernel()
def histogram_bin_ct(
    self: torch.Tensor,
    bins: int = 100,
    range: list[float] | None = None,
    weight: torch.Tensor | None = None,
    density: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    pts, w = _flat(self, weight)
    _check(pts, w, "torch.histogram")
    (edges,) = histogramdd_bin_edges(pts, [bins], range, w, density)
    return _histogramdd(pts, [edges], w, density, True), edges


@kernel()
def histogram_bins_tensor(
    self: torch.Tensor,
    bins: torch.Tensor,
    weight: torch.Tensor | None = None,
    density: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    pts, w = _flat(self, weight)
    hist = histogramdd_from_bin_tensors(pts, [bins], w, density)
    return hist, bins.clone()


@kernel()
def histogram_bin_ct_out(
    self: torch.Tensor,
    bins: int,
    range: list[float] | None,
    weight: torch.Tensor | None,
    density: bool,
    hist: torch.Tensor,
    bin_edges: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    h, e = histogram_bin_ct(self, bins, range, weight, density)
    write_result(hist, h)
    write_result(bin_edges, e)
    return hist, bin_edges


@kernel()
def histogram_bins_tensor_out(
    self: torch.Tensor,
    bins: torch.Tensor,
    weight: torch.Tensor | None,
    density: bool,
    hist: torch.Tensor,
    bin_edges: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    h, e = histogram_bins_tensor(self, bins, weight, density)
    write_result(hist, h)
    write_result(bin_edges, e)
    return hist, bin_edges
