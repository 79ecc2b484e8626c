"""Kernel-level tests of issue 17's segmented reductions (torch_ext/ops/segment.py),
histogram bins (histogram.py), multilabel margin loss (loss_multilabel.py), fractional
max pooling (pooling/fractional.py) and LU pivots (linalg_lu.py), against PyTorch's
CPU kernels."""

import pytest
import torch

from torch_ext.ops import histogram as H
from torch_ext.ops import linalg_lu as LU
from torch_ext.ops import loss_multilabel as ML
from torch_ext.ops import segment as S
from torch_ext.ops.pooling import fractional as F

from helpers import assert_kernel_close as assert_close

REDUCES = ["sum", "mean", "max", "min", "prod"]


def _data():
    torch.manual_seed(0)
    x = torch.randn(9, 3, 2, dtype=torch.float64)
    x[1, 0, 0] = x[2, 0, 0] = 5.0  # a tie in segment 0
    x[4, 1, 1] = 0.0  # a zero in segment 1 (prod's gradient)
    x[5, 2, 0] = float("nan")
    return x


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("initial", [None, 2.0])
def test_segment_reduce_lengths_offsets_and_backward(reduce, initial, device):
    x = _data()
    lengths = torch.tensor([3, 0, 4, 2])
    offsets = torch.tensor([0, 3, 3, 7, 9])
    ref = torch.segment_reduce(x, reduce, lengths=lengths, initial=initial)
    for kw in (dict(lengths=lengths.to(device)), dict(offsets=offsets.to(device))):
        res = S.segment_reduce(x.to(device), reduce, axis=0, initial=initial, **kw)
        assert_close(res, ref)
    g = torch.randn(ref.shape, dtype=torch.float64).abs() + 0.5
    ref_g = torch.ops.aten._segment_reduce_backward(
        g, ref, x, reduce, lengths=lengths, initial=initial
    )
    res_g = S.segment_reduce_backward(
        g.to(device), ref.to(device), x.to(device), reduce, lengths=lengths.to(device),
        initial=initial,
    )  # fmt: skip
    assert_close(res_g, ref_g)


def test_segment_reduce_inner_axis(device):
    x = torch.randn(2, 7, 5)
    lengths = torch.tensor([[2, 5], [7, 0]])
    for reduce in REDUCES:
        ref = torch.segment_reduce(x, reduce, lengths=lengths, axis=1)
        res = S.segment_reduce(x.to(device), reduce, lengths=lengths.to(device), axis=1)
        assert_close(res, ref)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("density", [False, True])
def test_histogram_bins(weighted, density, device):
    torch.manual_seed(1)
    x = torch.randn(200, dtype=torch.float64)
    x[:4] = torch.tensor([0.0, 0.25, 1.0, -1.0], dtype=torch.float64)  # on edges
    w = torch.rand(200, dtype=torch.float64) if weighted else None
    wd = w.to(device) if weighted else None
    for bins, rng in ((7, None), (4, (-1.0, 1.0)), (1, (0.0, 0.0))):
        h, e = H.histogram_bin_ct(x.to(device), bins, rng, wd, density)
        rh, re = torch.histogram(x, bins, range=rng, weight=w, density=density)
        assert_close(e, re)
        assert_close(h, rh)
    x[4] = float("nan")  # counted nowhere (a range is needed then)
    h, _ = H.histogram_bin_ct(x.to(device), 5, (-2.0, 2.0), wd, density)
    assert_close(h, torch.histogram(x, 5, range=(-2.0, 2.0), weight=w, density=density)[0])
    edges = torch.tensor([-2.0, -0.5, 0.0, 0.25, 3.0], dtype=torch.float64)
    h, e = H.histogram_bins_tensor(x.to(device), edges.to(device), wd, density)
    rh, _ = torch.histogram(x, edges, weight=w, density=density)
    assert_close(h, rh)


def test_histogramdd(device):
    torch.manual_seed(2)
    x = torch.randn(50, 3, dtype=torch.float64)
    ref = torch.histogramdd(x, [3, 4, 2])
    res = H.histogramdd_from_bin_cts(x.to(device), [3, 4, 2])
    assert_close(res, ref.hist)
    edges = [torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64)] * 3
    ref = torch.histogramdd(x, edges)
    res = H.histogramdd_from_bin_tensors(x.to(device), [e.to(device) for e in edges])
    assert_close(res, ref.hist)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_multilabel_margin_forward_backward(reduction, device):
    torch.manual_seed(3)
    x = torch.randn(4, 6, dtype=torch.float64)
    t = torch.tensor([[3, 0, -1, 1, 2, 2], [5, 4, 3, 2, 1, 0], [-1, 2, 3, 0, 0, 0], [1, 1, -1, 0, 0, 0]])  # fmt: skip
    ref, ref_t = torch.ops.aten.multilabel_margin_loss_forward(x, t, reduction)
    res, res_t = ML.multilabel_margin_loss_forward(x.to(device), t.to(device), reduction)
    assert_close(res, ref)
    assert_close(res_t, ref_t)
    g = torch.randn(ref.shape, dtype=torch.float64)
    ref_g = torch.ops.aten.multilabel_margin_loss_backward(g, x, t, reduction, ref_t)
    res_g = ML.multilabel_margin_loss_backward(
        g.to(device), x.to(device), t.to(device), reduction, res_t
    )
    assert_close(res_g, ref_g)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fractional_max_pool_windows(dtype, device):
    torch.manual_seed(4)
    x = torch.randn(2, 3, 9, 11, dtype=dtype)
    x[0, 0, 2, 3] = float("nan")
    u = torch.rand(2, 3, 2, dtype=dtype)
    ref, ref_i = torch.ops.aten.fractional_max_pool2d(x, [2, 3], [4, 5], u)
    out = torch.empty(ref.shape, dtype=dtype, device=device)
    idx = torch.empty(ref.shape, dtype=torch.int64, device=device)
    F.fractional_max_pool2d(x.to(device), [2, 3], [4, 5], u.to(device), out, idx)
    assert_close(out, ref)
    assert_close(idx, ref_i)
    x3 = torch.randn(1, 2, 5, 6, 7, dtype=dtype)
    u3 = torch.rand(1, 2, 3, dtype=dtype)
    ref, ref_i = torch.ops.aten.fractional_max_pool3d(x3, [2, 2, 3], [3, 4, 1], u3)
    out = torch.empty(ref.shape, dtype=dtype, device=device)
    idx = torch.empty(ref.shape, dtype=torch.int64, device=device)
    F.fractional_max_pool3d(x3.to(device), 2, 2, 3, 3, 4, 1, u3.to(device), 1, 2, 5, 6, 7, out, idx)  # fmt: skip
    assert_close(out, ref)
    assert_close(idx, ref_i)


def test_pivots_to_permutation(device):
    torch.manual_seed(5)
    A = torch.randn(3, 6, 4, dtype=torch.float64)
    LUd, piv = torch.linalg.lu_factor(A)
    P, _, _ = torch.lu_unpack(LUd, piv)
    perm = LU.pivots_to_permutation(piv.to(device), 6).cpu()
    # P[:, perm[i], i] = 1
    expect = P.argmax(-2)
    assert torch.equal(perm, expect)
