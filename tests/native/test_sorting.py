"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the sorting
family (sort/topk, median/kthvalue/mode, searchsorted/bucketize,
bincount/histc, count_nonzero/isin; unique: test_unique.py)."""

import pytest

import torch

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, rand, same


nan, inf = float("nan"), float("inf")


def dev(x):
    return x.to(DEV)


def picks(x, dim, keepdim, res):
    """res = (values, indices) with indices picking values out of x along dim."""
    values, idx = res[0].cpu(), res[1].cpu()
    d = dim % x.dim()
    got = x.gather(d, idx if keepdim else idx.unsqueeze(d))
    torch.testing.assert_close(
        got if keepdim else got.squeeze(d), values, rtol=0, atol=0, equal_nan=True
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("shape,dim", [((7, 9), 1), ((6, 5, 4), 0), ((2, 2100), -1), ((10,), 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_median_kthvalue_mode_along_a_dim(dtype, shape, dim, keepdim):
    torch.manual_seed(0)
    x = (torch.randn(shape) * 4).round().to(dtype)  # many ties
    for fn in (
        lambda t: torch.median(t, dim, keepdim),
        lambda t: torch.nanmedian(t, dim, keepdim),
        lambda t: torch.kthvalue(t, 2, dim, keepdim),
        lambda t: torch.mode(t, dim, keepdim),
    ):
        ref, res = fn(x), fn(dev(x))
        same(res.values, ref.values)
        assert res.indices.dtype == torch.long and res.indices.shape == ref.indices.shape
        picks(x, dim, keepdim, res)
    same(torch.median(dev(x)), torch.median(x))


def test_median_nan_rules():
    x = torch.tensor([[1.0, nan, 3.0, 2.0], [4.0, 5.0, 6.0, 7.0], [nan, nan, nan, nan]])
    for fn in (lambda t: torch.median(t, 1), lambda t: torch.nanmedian(t, 1)):
        ref, res = fn(x), fn(dev(x))
        same(res.values, ref.values)
        picks(x, 1, False, res)
    same(torch.median(dev(x)), torch.median(x))  # NaN: any NaN makes the median NaN
    same(torch.nanmedian(dev(x)), torch.nanmedian(x))
    same(torch.nanmedian(dev(torch.tensor([]))), torch.nanmedian(torch.tensor([])))
    same(torch.kthvalue(dev(x), 4, 1).values, torch.kthvalue(x, 4, 1).values)  # NaN sorts last


def test_mode_prefers_the_smallest_of_equally_frequent_values():
    x = torch.tensor([[3, 1, 3, 1, 2], [5, 5, 5, 0, 0], [9, 8, 7, 6, 5]])
    res = torch.mode(dev(x), 1)
    assert res.values.cpu().tolist() == [1, 5, 5]
    picks(x, 1, False, res)


def test_order_statistic_errors():
    x = dev(torch.randn(3, 4))
    with pytest.raises(RuntimeError, match="k out of range"):  # as on CPU (not an IndexError)
        torch.kthvalue(x, 5, 1)
    with pytest.raises(IndexError, match="out of range"):
        torch.median(x, 2)
    with pytest.raises(IndexError, match="non-zero size"):
        torch.median(dev(torch.empty(3, 0)), 1)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_searchsorted_and_bucketize(right, dtype):
    torch.manual_seed(3)
    seq = torch.sort((torch.randn(37) * 5).round()).values.to(dtype)  # duplicates
    vals = torch.cat([seq[::3], (torch.randn(20) * 8).round().to(dtype)]).reshape(3, -1)
    same(
        torch.searchsorted(dev(seq), dev(vals), right=right),
        torch.searchsorted(seq, vals, right=right),
    )
    same(torch.bucketize(dev(vals), dev(seq), right=right), torch.bucketize(vals, seq, right=right))
    res = torch.searchsorted(dev(seq), dev(vals), out_int32=True, side="right" if right else "left")
    assert res.dtype == torch.int32
    same(res, torch.searchsorted(seq, vals, out_int32=True, right=right))
    # One boundary row per leading index, and an explicit sorter.
    rows = torch.randn(4, 3, 50).to(dtype)
    order = torch.argsort(rows, -1)
    v = torch.randn(4, 3, 7).to(dtype)
    same(
        torch.searchsorted(dev(rows), dev(v), sorter=dev(order), right=right),
        torch.searchsorted(rows, v, sorter=order, right=right),
    )
    same(torch.searchsorted(dev(seq), 1.5), torch.searchsorted(seq, 1.5))


def test_searchsorted_nan_and_inf():
    seq = torch.tensor([-inf, -1.0, 0.0, 2.0, inf, nan])
    vals = torch.tensor([nan, inf, -inf, 0.0, 5.0])
    for right in (False, True):
        same(
            torch.searchsorted(dev(seq), dev(vals), right=right),
            torch.searchsorted(seq, vals, right=right),
        )


def test_search_errors():
    seq, vals = dev(torch.arange(5.0)), dev(torch.rand(3))
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        torch.searchsorted(seq, vals, right=True, side="left")
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        torch.searchsorted(dev(torch.rand(2, 5)), dev(torch.rand(3, 4)))
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        torch.bucketize(vals, dev(torch.rand(2, 5)))
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long"):
        torch.searchsorted(seq, vals, sorter=dev(torch.zeros(5, dtype=torch.int32)))


def test_bincount():
    torch.manual_seed(4)
    x = torch.randint(0, 50, (3000,))
    same(torch.bincount(dev(x)), torch.bincount(x))
    same(torch.bincount(dev(x), minlength=80), torch.bincount(x, minlength=80))
    for wdtype in (torch.float32, torch.float64, torch.float16):
        w = torch.rand(3000).to(wdtype)
        res, ref = torch.bincount(dev(x), dev(w)), torch.bincount(x, w)
        assert res.dtype == ref.dtype
        same(res, ref, rtol=1e-5, atol=1e-3)
    same(
        torch.bincount(dev(torch.empty(0, dtype=torch.long)), minlength=3),
        torch.zeros(3, dtype=torch.long),
    )
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(dev(torch.tensor([1, -2])))
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        torch.bincount(dev(torch.rand(3)))


def test_histc():
    torch.manual_seed(5)
    x = torch.randn(5000)
    same(torch.histc(dev(x), bins=17), torch.histc(x, bins=17))  # range from the data
    same(torch.histc(dev(x), bins=10, min=-1, max=1), torch.histc(x, bins=10, min=-1, max=1))
    same(
        torch.histc(dev(torch.full((4,), 2.0)), bins=4), torch.histc(torch.full((4,), 2.0), bins=4)
    )
    # float64 data whose minimum fp32 rounds up: the range reaches the kernel exactly
    y = torch.tensor([0.1, 0.30000000000000004, 0.7, 1 / 3], dtype=torch.float64)
    same(torch.histc(dev(y), bins=3), torch.histc(y, bins=3))
    assert torch.histc(dev(y), bins=3).sum().item() == 4
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(dev(x), bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(dev(x), bins=3, min=2, max=1)


def test_count_nonzero_trace_equal_aminmax_isin_cross():
    torch.manual_seed(8)
    x = (torch.randn(5, 6, 7) * 2).round()
    same(torch.count_nonzero(dev(x)), torch.count_nonzero(x))
    same(torch.count_nonzero(dev(x), dim=(0, 2)), torch.count_nonzero(x, dim=(0, 2)))
    m = torch.randint(-5, 5, (6, 4))
    same(torch.trace(dev(m)), torch.trace(m))
    same(torch.trace(dev(x[0])), torch.trace(x[0]))
    with pytest.raises(RuntimeError, match="expected a matrix"):
        torch.trace(dev(x))
    assert torch.equal(dev(x), dev(x.clone())) and not torch.equal(dev(x), dev(x + 1))
    assert not torch.equal(dev(x), dev(x[0])) and not torch.equal(
        dev(torch.tensor([nan])), dev(torch.tensor([nan]))
    )
    same(torch.aminmax(dev(x)), tuple(torch.aminmax(x)))
    same(torch.aminmax(dev(x), dim=1, keepdim=True), tuple(torch.aminmax(x, dim=1, keepdim=True)))
    test = torch.tensor([0.0, 2.0, -1.0, nan])
    for invert in (False, True):
        same(torch.isin(dev(x), dev(test), invert=invert), torch.isin(x, test, invert=invert))
    big_e, big_t = (
        torch.randint(0, 5000, (3000,)),
        torch.randint(0, 5000, (2000,)),
    )  # the sorted path
    same(torch.isin(dev(big_e), dev(big_t)), torch.isin(big_e, big_t))
    same(torch.isin(dev(x), 2.0), torch.isin(x, 2.0))
    a, b = torch.randn(4, 3, 5), torch.randn(1, 3, 5)
    same(torch.linalg.cross(dev(a), dev(b), dim=1), torch.linalg.cross(a, b, dim=1))
    same(
        torch.cross(dev(a.transpose(1, 2)), dev(b.transpose(1, 2)), dim=-1),
        torch.cross(a.transpose(1, 2), b.transpose(1, 2), dim=-1),
    )
    with pytest.raises(RuntimeError, match="must have length 3"):
        torch.linalg.cross(dev(torch.randn(4, 2)), dev(torch.randn(4, 2)))


def test_selection_autograd():
    """Backward of the selections runs on the device (PyTorch's formulas over
    our forward's indices)."""
    torch.manual_seed(9)
    x = torch.randn(6, 8)
    for fn in (
        lambda t: torch.median(t, 1).values.sum(),
        lambda t: torch.kthvalue(t, 3, 0).values.sum(),
        lambda t: torch.cummax(t, 1).values.sum(),
        lambda t: torch.logcumsumexp(t, 1).sum(),
        lambda t: torch.nanmedian(t),
        lambda t: torch.take(t, torch.tensor([0, 5, 5], device=t.device)).sum(),
    ):
        xc = x.clone().requires_grad_()
        xd = dev(x).requires_grad_()
        fn(xc).backward()
        fn(xd).backward()
        same(xd.grad, xc.grad)


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


@pytest.mark.parametrize("dtype", [F32, BF16, torch.int32])
def test_sort_topk(dtype):
    x = rand((5, 40), dtype, -1000, 1000)
    for dim, desc in [(1, False), (0, True), (-1, True)]:
        v, i = torch.sort(x.to(DEV), dim=dim, descending=desc, stable=True)
        ev, ei = torch.sort(x, dim=dim, descending=desc, stable=True)
        assert torch.equal(v.cpu(), ev) and torch.equal(i.cpu(), ei)
    vo, io = torch.empty(0, dtype=dtype, device=DEV), torch.empty(0, dtype=torch.int64, device=DEV)
    torch.sort(x.to(DEV), dim=1, stable=True, out=(vo, io))
    assert torch.equal(vo.cpu(), torch.sort(x, dim=1, stable=True).values)
    ties = rand((3, 30), dtype, 0, 3).to(dtype)
    v, i = torch.sort(ties.to(DEV), stable=True)
    assert torch.equal(i.cpu(), torch.sort(ties, stable=True).indices)
    for k, largest in [(1, True), (5, False), (40, True)]:
        v, i = torch.topk(x.to(DEV), k, 1, largest)
        ev, _ = torch.topk(x, k, 1, largest)
        assert torch.equal(v.cpu(), ev) and torch.equal(x.gather(1, i.cpu()), ev)
    torch.topk(x.to(DEV), 3, 0, out=(vo, io))
    assert torch.equal(vo.cpu(), torch.topk(x, 3, 0).values)
    long = rand((2, 5000), dtype, -1000, 1000)  # the chunked topk path
    v, i = torch.topk(long.to(DEV), 7)
    assert torch.equal(v.cpu(), torch.topk(long, 7).values) and torch.equal(
        long.gather(1, i.cpu()), v.cpu()
    )
    nan = torch.tensor([3.0, float("nan"), -1.0, 2.0])
    torch.testing.assert_close(
        torch.sort(nan.to(DEV)).values.cpu(), torch.sort(nan).values, equal_nan=True
    )


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8])
def test_histc_integer_inputs_count_as_on_cuda(dtype):
    """CUDA's histc takes integers (the CPU's does not; HF MoE routing calls it on
    expert ids): the counts are the float histogram's, in the input's dtype."""
    x = torch.randint(0, 9, (200,), dtype=dtype)
    for bins, lo, hi in [(9, 0, 8), (4, 0, 3), (5, 0, 0), (3, 2.7, 6.2)]:
        got = torch.histc(x.to(DEV), bins=bins, min=lo, max=hi).cpu()
        ref_lo, ref_hi = (int(lo), int(hi)) if (lo, hi) != (0, 0) else (0, 0)
        ref = torch.histc(x.double(), bins=bins, min=ref_lo, max=ref_hi)
        assert got.dtype == dtype
        torch.testing.assert_close(got, ref.to(dtype))
    with pytest.raises(RuntimeError, match="real number type"):
        torch.histc(torch.ones(3, dtype=torch.bool, device=DEV))


def test_nonzero_static_pads_truncates_and_checks_size():
    x = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    for size, fill in [(5, -1), (2, 7), (0, -1), (3, 0)]:
        res = torch.nonzero_static(x.to(DEV), size=size, fill_value=fill)
        assert res.device.type == "privateuseone"
        assert torch.equal(res.cpu(), torch.nonzero_static(x, size=size, fill_value=fill))
    out = torch.empty(0, dtype=torch.int64, device=DEV)
    torch.nonzero_static(x.to(DEV), size=4, out=out)
    assert torch.equal(out.cpu(), torch.nonzero_static(x, size=4))
    assert torch.nonzero_static(torch.tensor(1.0, device=DEV), size=2).shape == (2, 0)
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        torch.nonzero_static(x.to(DEV), size=-1)
