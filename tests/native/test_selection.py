"""Selection, counting and searching (torch_ext/ops/selection.py) on the
device against CPU: shapes beyond one block (the scans' carry, the long-row
sort), NaN and infinities, every option, and the errors PyTorch raises.
Fallback = error, so a pass means the op ran natively."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV

nan, inf = float("nan"), float("inf")


def dev(x):
    return x.to(DEV)


def same(a, b, **kw):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y, **kw)
        return
    assert a.device.type == "privateuseone"
    torch.testing.assert_close(a.cpu(), b, equal_nan=True, **kw)


def picks(x, dim, keepdim, res):
    """res = (values, indices) with indices picking values out of x along dim."""
    values, idx = res[0].cpu(), res[1].cpu()
    d = dim % x.dim()
    got = x.gather(d, idx if keepdim else idx.unsqueeze(d))
    torch.testing.assert_close(
        got if keepdim else got.squeeze(d), values, rtol=0, atol=0, equal_nan=True
    )


# -- order statistics ---------------------------------------------------------


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
    with pytest.raises(IndexError, match="k out of range"):
        torch.kthvalue(x, 5, 1)
    with pytest.raises(IndexError, match="out of range"):
        torch.median(x, 2)
    with pytest.raises(IndexError, match="non-zero size"):
        torch.median(dev(torch.empty(3, 0)), 1)


# -- scans ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype,shape,dim",
    [
        (dt, shape, dim)
        for dt in (torch.float32, torch.float16, torch.bfloat16, torch.int32)
        for shape, dim in (((5, 7), 1), ((600, 3), 0), ((2, 3, 4), 1))
    ]
    + [(torch.float32, (2, 4200), 1)],
)  # longer than one block of the scan: the carry
def test_cummax_cummin(dtype, shape, dim):
    torch.manual_seed(1)
    x = (torch.randn(shape) * 3).round().to(dtype)  # ties: the last index wins, as on CPU
    for fn in (torch.cummax, torch.cummin):
        ref, res = fn(x, dim), fn(dev(x), dim)
        same(res.values, ref.values)
        same(res.indices, ref.indices)


def test_cummax_nan_propagates_with_its_index():
    x = torch.tensor([1.0, 3.0, nan, 5.0, nan, 0.0])
    for fn in (torch.cummax, torch.cummin):
        same(fn(dev(x), 0), tuple(fn(x, 0)))


@pytest.mark.parametrize(
    "dtype,shape,dim",
    [
        (dt, shape, dim)
        for dt in (torch.float32, torch.float64, torch.bfloat16)
        for shape, dim in (((4, 9), 1), ((300, 2), 0))
    ]
    + [(torch.float32, (1, 4200), 1)],
)
def test_logcumsumexp(dtype, shape, dim):
    torch.manual_seed(2)
    x = (torch.randn(shape) * 10).to(dtype)
    ref = torch.logcumsumexp(x.double(), dim).to(dtype)
    tol = {torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2)}.get(dtype, dict(rtol=1e-5, atol=1e-5))
    same(torch.logcumsumexp(dev(x), dim), ref, **tol)


def test_logcumsumexp_infinities_and_nan():
    x = torch.tensor([-inf, -inf, 0.0, inf, 1.0, inf, nan, 2.0])
    same(torch.logcumsumexp(dev(x), 0), torch.logcumsumexp(x, 0))
    same(torch.logcumsumexp(dev(torch.full((5,), -inf)), 0), torch.full((5,), -inf))


# -- searching --------------------------------------------------------------------


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


def test_repeat_interleave_with_tensor_repeats():
    r = torch.tensor([2, 0, 3, 1])
    same(torch.repeat_interleave(dev(r)), torch.repeat_interleave(r))
    x = torch.randn(4, 3)
    same(torch.repeat_interleave(dev(x), dev(r), dim=0), torch.repeat_interleave(x, r, dim=0))
    with pytest.raises(RuntimeError, match="negative"):
        torch.repeat_interleave(dev(torch.tensor([1, -1])))


# -- counting ---------------------------------------------------------------------


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
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(dev(x), bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(dev(x), bins=3, min=2, max=1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_unique_and_unique_consecutive(dtype):
    torch.manual_seed(6)
    x = (torch.randn(6, 50) * 3).round().to(dtype)
    for kw in (
        dict(),
        dict(return_inverse=True),
        dict(return_counts=True),
        dict(return_inverse=True, return_counts=True),
    ):
        same(torch.unique(dev(x), **kw), torch.unique(x, **kw))
        same(torch.unique_consecutive(dev(x), **kw), torch.unique_consecutive(x, **kw))
    same(torch.unique(dev(x[:0])), torch.unique(x[:0]))
    with pytest.raises(NotImplementedError, match="unique_consecutive with dim"):
        torch.unique_consecutive(dev(x), dim=0)


# -- indexing by position and mask -------------------------------------------------


def test_take_put_index_fill_masked_scatter():
    torch.manual_seed(7)
    x = torch.randn(4, 5)
    idx = torch.tensor([[0, -1], [19, 7]])
    same(torch.take(dev(x), dev(idx)), torch.take(x, idx))
    same(torch.take(dev(x.t()), dev(idx)), torch.take(x.t(), idx))  # a non-contiguous self
    src = torch.randn(4)
    for acc in (False, True):
        ref, res = x.clone(), dev(x)
        ref.put_(torch.tensor([1, 1, -1, 3]), src, accumulate=acc)
        res.put_(dev(torch.tensor([1, 1, -1, 3])), dev(src), accumulate=acc) if acc else res.put_(
            dev(torch.tensor([1, 2, -1, 3])), dev(src)
        )
        if not acc:
            ref = x.clone().put_(torch.tensor([1, 2, -1, 3]), src)
        same(res, ref)
    same(
        dev(x).index_fill(1, dev(torch.tensor([0, -1])), -2.5),
        x.index_fill(1, torch.tensor([0, -1]), -2.5),
    )
    same(
        dev(x).index_fill(0, dev(torch.tensor([2])), torch.tensor(7.0)),
        x.index_fill(0, torch.tensor([2]), torch.tensor(7.0)),
    )
    mask = torch.rand(4, 5) > 0.5
    source = torch.randn(30)
    same(dev(x).masked_scatter(dev(mask), dev(source)), x.masked_scatter(mask, source))
    rowmask = torch.tensor([True, False, True, False, True])  # broadcast over rows
    same(dev(x).masked_scatter(dev(rowmask), dev(source)), x.masked_scatter(rowmask, source))


def test_indexing_errors_name_the_problem():
    x = dev(torch.randn(4, 5))
    with pytest.raises(IndexError, match="out of bounds"):
        torch.take(x, dev(torch.tensor([20])))
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_fill(1, dev(torch.tensor([5])), 1.0)
    with pytest.raises(RuntimeError, match="same number of elements"):
        x.put_(dev(torch.tensor([0, 1])), dev(torch.randn(3)))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones"):
        x.masked_scatter_(dev(torch.ones(4, 5, dtype=torch.bool)), dev(torch.randn(3)))
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.masked_scatter_(dev(torch.ones(4, 5, dtype=torch.uint8)), dev(torch.randn(20)))
    before = x.cpu()
    with pytest.raises(IndexError):
        x.put_(dev(torch.tensor([0, 99])), dev(torch.randn(2)))
    assert torch.equal(x.cpu(), before)  # nothing written


# -- small reductions -----------------------------------------------------------------


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


# -- index bounds (torch_ext/ops/_bounds.py) ---------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        "index_select",
        "embedding",
        "embedding_backward",
        "gather",
        "scatter",
        "scatter_add",
        "index",
        "index_put",
        "index_put_acc",
        "index_add",
        "nll_loss",
        "cross_entropy",
    ],
)
def test_out_of_range_indices_raise_and_touch_nothing(case):
    """Each indexing kernel masks off-range lanes and raises the error PyTorch
    raises (same exception type), naming the index. The operand is a view into
    a larger buffer: the memory around it (where an off-range write would land)
    and, with no valid index, the view itself are unchanged; the device stays
    usable."""
    torch.manual_seed(10)
    base = torch.randn(9, 3)
    based = dev(base)
    xd = based[2:7]
    i = lambda *v: dev(torch.tensor(v))  # noqa: E731
    ones = dev(torch.ones(1, 3))
    calls = {
        "index_select": (
            IndexError,
            "index 5 is out of bounds",
            lambda: xd.index_select(0, i(0, 5)),
        ),
        "embedding": (
            IndexError,
            "index -1 is out of bounds",
            lambda: torch.nn.functional.embedding(i(1, -1), xd),
        ),
        "embedding_backward": (
            IndexError,
            "index 7 is out of bounds",
            lambda: torch.ops.aten.embedding_dense_backward(
                dev(torch.ones(2, 3)), i(1, 7), 5, -1, False
            ),
        ),
        "gather": (
            RuntimeError,
            "index 3 is out of bounds for dimension 1 with size 3",
            lambda: xd.gather(1, i([0, 3])),
        ),
        "scatter": (
            RuntimeError,
            "index -1 is out of bounds for dimension 0 with size 5",
            lambda: xd.scatter_(0, i([-1, -1, -1]), 1.0),
        ),
        "scatter_add": (
            RuntimeError,
            "index 5 is out of bounds",
            lambda: xd.scatter_add_(0, i([5, 5, 5]), ones),
        ),
        "index": (
            IndexError,
            "index -6 is out of bounds for dimension 0 with size 5",
            lambda: xd[i(0, -6)],
        ),
        "index_put": (
            IndexError,
            "index 5 is out of bounds",
            lambda: xd.index_put_((i(5),), dev(torch.ones(3))),
        ),
        "index_put_acc": (
            IndexError,
            "index -7 is out of bounds",
            lambda: xd.index_put_((i(-7, -7),), dev(torch.ones(2, 3)), accumulate=True),
        ),
        "index_add": (IndexError, "index 5 is out of bounds", lambda: xd.index_add_(0, i(5), ones)),
        "nll_loss": (
            IndexError,
            "Target 3 is out of bounds",
            lambda: torch.nn.functional.nll_loss(xd, i(0, 1, 2, 3, 0)),
        ),
        "cross_entropy": (
            IndexError,
            "Target -2 is out of bounds",
            lambda: torch.nn.functional.cross_entropy(xd, i(0, 1, 2, -2, 0)),
        ),
    }
    exc, text, call = calls[case]
    with pytest.raises(exc, match=text):
        call()
        torch.privateuseone.synchronize()  # (the cuda driver may report at the next sync)
    assert torch.equal(based.cpu(), base)
    assert torch.equal(xd.index_select(0, i(4, 0)).cpu(), base[2:7][[4, 0]])  # still usable


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_embedding_scale_grad_by_freq(dtype):
    torch.manual_seed(11)
    w = torch.randn(10, 4).to(dtype)
    idx = torch.tensor([[1, 3, 3, 7], [3, 0, 1, 9]])
    wc, wd = w.clone().requires_grad_(), w.to(DEV).requires_grad_()
    g = torch.randn(2, 4, 4).to(dtype)
    torch.nn.functional.embedding(idx, wc, scale_grad_by_freq=True, padding_idx=0).backward(g)
    torch.nn.functional.embedding(dev(idx), wd, scale_grad_by_freq=True, padding_idx=0).backward(
        dev(g)
    )
    assert wd.grad.dtype == dtype
    same(wd.grad, wc.grad, rtol=2e-3, atol=2e-3)


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
