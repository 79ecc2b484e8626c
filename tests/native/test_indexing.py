"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
indexing family (gather/scatter, index, index_put, index_add,
scatter_reduce, take/put, masked ops, embedding)."""

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, assert_close, check, grads, rand, same, to_dev, to_f64


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def test_embedding_backward():
    w = rand((11, 6), F32)
    idx = torch.tensor([[1, 3, 3], [10, 0, 1]])
    grads(lambda w, i: F.embedding(i, w), w, idx, reduce=4)
    grads(lambda w, i: F.embedding(i, w, padding_idx=3), w, idx, reduce=4)
    grads(lambda w, i: F.embedding(i, w), w.bfloat16(), idx, dtype=BF16, reduce=4)
    g = rand((2, 3, 6), F32)
    for pad in (-1, 3):
        for freq in (False, True):
            r = torch.ops.aten.embedding_dense_backward(g.to(DEV), idx.to(DEV), 11, pad, freq)
            assert_close(
                r, torch.ops.aten.embedding_dense_backward(g.double(), idx, 11, pad, freq), F32, 4
            )


def test_index_add_with_alpha_and_duplicates():
    base = torch.randn(6, 3)
    idx = torch.tensor([0, 5, 5, 2])
    src = torch.randn(4, 3)
    expected = base.index_add(0, idx, src, alpha=-1.5)
    torch.testing.assert_close(
        base.to(DEV).index_add(0, idx.to(DEV), src.to(DEV), alpha=-1.5).cpu(), expected
    )
    d = base.to(DEV)
    d.index_add_(0, idx.to(DEV), src.to(DEV), alpha=-1.5)
    torch.testing.assert_close(d.cpu(), expected)


@pytest.mark.parametrize("dtype", [F32, BF16, torch.int64])
def test_index_copy_is_one_launch_with_strided_source(dtype):
    # a static KV cache: cache.index_copy_(2, positions, states) with states a
    # transposed view, (batch, heads, new, head_dim) of (batch, new, heads, head_dim)
    from torch_ext.ops import _launch

    cache = (torch.randn(2, 4, 16, 8) * 10).to(dtype)
    states = (torch.randn(2, 3, 4, 8) * 10).to(dtype).transpose(1, 2)
    pos = torch.tensor([5, 6, 11])
    expected = cache.clone().index_copy_(2, pos, states)
    d, ds, dp = cache.to(DEV), states.to(DEV), pos.to(DEV)
    assert not ds.is_contiguous()
    d.clone().index_copy_(2, dp, ds)  # once before counting (first use of the bounds flags)
    before = _launch.launches()
    d.index_copy_(2, dp, ds)
    assert _launch.launches() - before == 1
    assert torch.equal(d.cpu(), expected)
    assert torch.equal(cache.to(DEV).index_copy(-2, dp, ds).cpu(), expected)
    # every dim, and a 0-dim source into a 1-d tensor
    for dim in range(4):
        src = torch.randn(*[2 if i == dim else n for i, n in enumerate(cache.shape)]).to(dtype)
        idx = torch.tensor([1, 0])
        ref = cache.index_copy(dim, idx, src)
        assert torch.equal(cache.to(DEV).index_copy(dim, idx.to(DEV), src.to(DEV)).cpu(), ref)
    one = torch.zeros(5, dtype=dtype)
    ref = one.index_copy(0, torch.tensor([3]), torch.tensor(7, dtype=dtype))
    got = one.to(DEV).index_copy(0, torch.tensor([3]).to(DEV), torch.tensor(7, dtype=dtype).to(DEV))
    assert torch.equal(got.cpu(), ref)
    with pytest.raises((IndexError, RuntimeError), match="out of bounds"):
        cache.to(DEV).index_copy_(2, torch.tensor([5, 16, 1]).to(DEV), ds)
        torch.privateuseone.synchronize()  # the cuda driver reports at the next sync


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_two(reduce, include_self):
    src = torch.rand(8) + 0.5
    idx = torch.tensor([0, 1, 0, 1, 2, 1, 4, 4])
    base = torch.rand(5) + 0.5
    expected = base.scatter_reduce(0, idx, src, reduce, include_self=include_self)
    actual = base.to(DEV).scatter_reduce(
        0, idx.to(DEV), src.to(DEV), reduce, include_self=include_self
    )
    torch.testing.assert_close(actual.cpu(), expected)


def test_out_and_inplace_overloads_of_the_later_entries():
    x = torch.rand(4, 6) + 0.5
    out = torch.empty(0, device=DEV)
    torch.cumprod(x.to(DEV), 1, out=out)
    torch.testing.assert_close(out.cpu(), x.cumprod(1))
    e = torch.empty(0, device=DEV)
    torch.eye(4, out=e)
    assert torch.equal(e.cpu(), torch.eye(4))
    idx, src = torch.tensor([0, 3, 3]), torch.randn(3, 6)
    o = torch.empty(0, device=DEV)
    torch.index_add(x.to(DEV), 0, idx.to(DEV), src.to(DEV), out=o)
    torch.testing.assert_close(o.cpu(), x.index_add(0, idx, src))
    ix, s = torch.tensor([[0, 1, 0, 2, 1, 3]]).expand(4, 6), torch.rand(4, 6)
    o2 = torch.empty(0, device=DEV)
    torch.scatter_reduce(x.to(DEV), 1, ix.to(DEV), s.to(DEV), "amax", out=o2)
    torch.testing.assert_close(o2.cpu(), x.scatter_reduce(1, ix, s, "amax"))
    d = x.to(DEV)
    d.scatter_reduce_(1, ix.to(DEV), s.to(DEV), "sum", include_self=False)
    torch.testing.assert_close(d.cpu(), x.scatter_reduce(1, ix, s, "sum", include_self=False))
    r = (x - 1).to(DEV)
    torch.relu_(r)
    torch.testing.assert_close(r.cpu(), torch.relu(x - 1))
    v1, v2 = torch.randn(4), torch.randn(6)
    o3 = torch.empty(0, device=DEV)
    torch.addr(x.to(DEV), v1.to(DEV), v2.to(DEV), beta=0.5, alpha=2, out=o3)
    torch.testing.assert_close(o3.cpu(), torch.addr(x, v1, v2, beta=0.5, alpha=2))
    n = torch.ops.aten.norm.ScalarOpt_dim_dtype(x.to(DEV), 2.0, [1], False, dtype=torch.float64)
    torch.testing.assert_close(
        n.cpu(), torch.ops.aten.norm.ScalarOpt_dim_dtype(x, 2.0, [1], False, dtype=torch.float64)
    )
    c = torch.randn(3, 2).to(DEV)
    assert torch.equal(torch.view_as_complex(c).cpu(), torch.view_as_complex(c.cpu()))


def dev(x):
    return x.to(DEV)


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


def _out(fn, *args, like=None, **kwargs):
    """fn(*args, out=...) on the device against fn on CPU (float64 when floating)."""
    same = fn(*args, **kwargs)
    outs = (
        tuple(torch.empty(0, dtype=s.dtype, device=DEV) for s in same)
        if isinstance(same, tuple)
        else torch.empty(0, dtype=same.dtype, device=DEV)
    )
    dev_args = to_dev(args)
    r = fn(*dev_args, out=outs, **kwargs)
    ref = fn(*to_f64(args), **kwargs)
    numel = max((a.numel() for a in args if isinstance(a, torch.Tensor)), default=1)
    red = max(1, numel // max(1, (same[0] if isinstance(same, tuple) else same).numel()))
    assert_close(tuple(outs) if isinstance(outs, tuple) else outs, ref, ref_same=same, reduce=red)
    return r


def _assign(t, key, v):
    t = t.clone()
    t[key] = v
    return t


@pytest.mark.parametrize("dtype", [F32, BF16, torch.int64, torch.bool])
def test_indexing(dtype):
    x = rand((6, 5), dtype)
    idx = torch.tensor([4, 0, 0, 2])
    check(torch.index_select, x, 0, idx)
    check(torch.index_select, x, 1, idx)
    _out(torch.index_select, x, 1, idx)
    g = torch.randint(0, 5, (6, 3))
    check(torch.gather, x, 1, g)
    _out(torch.gather, x, 1, g)
    m = rand((6, 5), torch.bool)
    check(torch.masked_select, x, m)
    check(torch.masked_select, x, m[0])
    check(lambda t: t[idx], x)  # index.Tensor
    check(lambda t: t[:, idx], x)
    check(lambda t: t[idx[:2], idx[2:]], x)
    check(lambda t: t[m], x)
    check(torch.nonzero, x)
    check(torch.nonzero, m)
    check(torch.nonzero, torch.zeros(0, 3, dtype=dtype))
    check(torch.argwhere, x)
    out = torch.empty(0, 2, dtype=torch.int64, device=DEV)
    torch.nonzero(m.to(DEV), out=out)
    assert torch.equal(out.cpu(), torch.nonzero(m))
    check(torch.flip, x, (0, 1))
    fo = torch.empty(0, dtype=dtype, device=DEV)
    torch.ops.aten.flip.out(x.to(DEV), [1], out=fo)
    assert torch.equal(fo.cpu(), x.flip(1))
    check(torch.tril, x, -1)
    check(torch.triu, x, 2)
    _out(torch.tril, x)
    _out(torch.triu, x, 1)
    for name in ("tril_", "triu_"):
        y = x.clone().to(DEV)
        getattr(y, name)(1)
        assert torch.equal(y.cpu(), getattr(x.clone(), name)(1))
    check(lambda t: t.repeat(2, 1, 3), x)
    check(torch.cat, [x, x[:2]], 0)
    check(torch.cat, [x, x.t().contiguous().t()[:, :1]], 1)
    check(torch.cat, [x, torch.empty(0, dtype=dtype)], 0)
    _out(torch.cat, [x, x], 1)
    check(torch.stack, [x, x], 1)


@pytest.mark.parametrize("dtype", [F32, F16, torch.int64])
def test_index_put_scatter(dtype):
    x = rand((6, 5), dtype)
    idx = torch.tensor([4, 0, 2])
    v = rand((3, 5), dtype)
    check(_assign, x, idx, v)
    check(_assign, x, (idx, torch.tensor([1, 1, 3])), rand((3,), dtype))
    check(_assign, x, rand((6, 5), torch.bool), torch.tensor(7, dtype=dtype))
    dup = torch.tensor([1, 1, 3, 1])
    check(lambda t, w: t.index_put((dup,), w, accumulate=True), x, rand((4, 5), dtype))
    check(
        lambda t, w: t.clone().index_put_((dup, torch.tensor([0, 0, 4, 0])), w, accumulate=True),
        x,
        rand((4,), dtype),
    )
    index = torch.randint(0, 6, (4, 5))
    src = rand((4, 5), dtype)
    uniq = torch.stack([torch.randperm(6)[:4] for _ in range(5)], 1)
    check(torch.scatter, x, 0, uniq, src)
    check(torch.scatter, x, 0, uniq, 2.0 if dtype.is_floating_point else 2)
    check(lambda *a: torch.scatter(*a, reduce="add"), x, 0, index, src, reduce=4)
    check(lambda *a: torch.scatter(*a, reduce="multiply"), x, 0, index, src.abs() + 1, reduce=4)
    check(
        lambda *a: torch.scatter(*a, reduce="add"),
        x,
        0,
        index,
        3.0 if dtype.is_floating_point else 3,
        reduce=4,
    )
    check(torch.scatter_add, x, 0, index, src, reduce=4)
    _out(torch.scatter_add, x, 0, index, src)
    _out(torch.scatter, x, 0, uniq, src)
    _out(torch.scatter, x, 0, uniq, 1.0 if dtype.is_floating_point else 1)
    _out(torch.scatter, x, 0, index, src, reduce="add")
    _out(torch.scatter, x, 0, index, 1.0 if dtype.is_floating_point else 1, reduce="add")
    for name, args in [
        ("scatter_", (0, uniq, src)),
        ("scatter_", (0, uniq, 5)),
        ("scatter_add_", (0, index, src)),
        ("scatter_", (0, index, src, "add")),
        ("scatter_", (0, index, 2, "add")),
    ]:
        y = x.clone().to(DEV)
        a = [t.to(DEV) if isinstance(t, torch.Tensor) else t for t in args]
        if len(a) == 4:
            getattr(y, name)(*a[:3], reduce=a[3])
            ref = getattr(x.clone(), name)(*args[:3], reduce=args[3])
        else:
            getattr(y, name)(*a)
            ref = getattr(x.clone(), name)(*args)
        assert_close(y, ref, reduce=4)


def test_embedding_max_norm_renormalises_rows_in_place():
    torch.manual_seed(0)
    w = torch.randn(10, 4) * 3
    idx = torch.tensor([[1, 2, 2], [9, 1, 0]])
    for norm_type in (2.0, 1.0):
        wc, wd = w.clone(), w.clone().to(DEV)
        out = F.embedding(idx.to(DEV), wd, max_norm=1.5, norm_type=norm_type)
        ref = F.embedding(idx, wc, max_norm=1.5, norm_type=norm_type)
        torch.testing.assert_close(out.cpu(), ref)
        torch.testing.assert_close(wd.cpu(), wc)  # the weight itself renormalised
    assert not torch.equal(wc, w)  # the test renormalised something
