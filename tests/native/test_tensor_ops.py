"""Reductions, BLAS, indexing, sorting, building and optimiser ops through
the dispatcher, with their out= and in-place overloads, and the layouts of
DESIGN §5: 0-size, 0-dim, broadcast, non-contiguous, large odd sizes."""

import pytest
import torch
import torch.nn.functional as F

from helpers import DEV, assert_close, check, rand, to_dev, to_f64

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


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


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_reductions(dtype):
    x = rand((6, 10, 7), dtype, noncontig=True)
    for dims, keep in [(None, False), (1, False), ((0, 2), True), (-1, True)]:
        kw = {} if dims is None else {"dim": dims, "keepdim": keep}
        red = x.numel() if dims is None else (x.shape[dims] if isinstance(dims, int) else 42)
        for fn in (torch.sum, torch.mean, torch.amax, torch.amin):
            check(fn, x, reduce=red, **kw)
        check(torch.std, x, reduce=red, **kw)
        check(torch.var, x, reduce=red, correction=0, **kw)
        check(torch.var_mean, x, reduce=red, **kw)
        check(torch.std_mean, x, reduce=red, **kw)
        check(torch.logsumexp, x, dim=kw.get("dim", (0, 1, 2)), keepdim=keep, reduce=red)
        for p in (2, 1, 3, float("inf"), 0):
            check(torch.linalg.vector_norm, x, p, reduce=red, **kw)
    check(torch.prod, rand((5, 4), dtype, 0.5, 1.5), 1, reduce=4)
    check(torch.prod, rand((5, 4), dtype, 0.5, 1.5), reduce=20)
    check(lambda t: torch.sum(t, 1, dtype=F32), x, reduce=10)
    for fn in (torch.max, torch.min):
        check(fn, x)
        check(fn, x, 1)
        check(fn, x, -1, True)
    for fn in (torch.argmax, torch.argmin):
        check(fn, x)
        check(fn, x, 2)
    check(torch.cumsum, x, 1, reduce=10)
    check(torch.cumsum, rand((5, 6), torch.int32), 0)


def test_reduction_out_and_ints():
    x = rand((5, 9), F32)
    _out(torch.sum, x, 1)
    _out(torch.mean, x, 0)
    _out(torch.amax, x, 1)
    _out(torch.amin, x, 0)
    _out(torch.argmax, x, 1)
    _out(torch.argmin, x, 0)
    _out(torch.max, x, 1)
    _out(torch.min, x, 1)
    _out(torch.prod, x, 1)
    _out(torch.std, x, 1)
    _out(torch.var, x, 0)
    _out(torch.logsumexp, x, 1)
    _out(torch.linalg.vector_norm, x, 2, 1)
    _out(torch.norm, x, 2, 1)
    _out(torch.norm, x, 3, 1, dtype=torch.float64)
    check(torch.norm, x, 2, 1, dtype=torch.float64)
    _out(torch.cumsum, x, 1)
    y = x.clone().to(DEV)
    y.cumsum_(0)
    assert_close(y, x.double().cumsum(0), reduce=5)
    b = rand((5, 9), torch.bool)
    for fn in (torch.all, torch.any):
        check(fn, b)
        check(fn, b, 1)
        check(fn, x)
        check(fn, rand((4, 3), torch.int32, 0, 1), 0)
        _out(fn, b)
        _out(fn, b, 0)
    i = rand((6, 7), torch.int64)
    for fn in (torch.sum, torch.amax, torch.amin, torch.argmax, torch.argmin):
        check(fn, i, 1)
    check(torch.prod, rand((4, 3), torch.int32, -3, 3), 1)
    check(torch.sum, b, 0)
    check(torch.mean, i.double(), 0)


def test_reduction_layouts():
    big = rand((1000, 37), F32)
    check(torch.sum, big, 0, reduce=1000)
    check(torch.sum, big, reduce=37000)
    check(torch.amax, big.t(), 1)
    check(torch.softmax, big, 1, reduce=37)
    check(torch.cumsum, big, 0, reduce=1000)
    check(torch.argmax, big, 0)
    empty = torch.empty(0, 4)
    check(torch.sum, empty)
    check(torch.sum, empty, 0)
    check(torch.amax, empty, 1)
    check(torch.mean, empty, 1)
    check(torch.any, empty)
    check(torch.all, empty, 1)
    check(torch.prod, empty)
    s = torch.tensor(2.5)
    for fn in (
        torch.sum,
        torch.mean,
        torch.amax,
        torch.argmax,
        torch.max,
        torch.logsumexp,
        torch.std,
    ):
        check(fn, s) if fn not in (torch.logsumexp,) else check(fn, s, 0)
    with pytest.raises(RuntimeError):
        torch.max(torch.empty(0, device=DEV))


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_blas(dtype):
    a, b = rand((7, 5), dtype), rand((5, 3), dtype)
    c = rand((7, 3), dtype)
    check(torch.mm, a, b, reduce=5)
    check(torch.mm, a.t().contiguous().t(), b, reduce=5)
    check(torch.addmm, c, a, b, beta=0.5, alpha=2, reduce=5)
    check(torch.addmm, c[:1], a, b, reduce=5)
    check(torch.mv, a, rand((5,), dtype), reduce=5)
    check(torch.dot, rand((9,), dtype), rand((9,), dtype), reduce=9)
    check(torch.outer, rand((4,), dtype), rand((3,), dtype))
    A, B = rand((2, 7, 5), dtype), rand((2, 5, 3), dtype)
    check(torch.bmm, A, B, reduce=5)
    check(torch.baddbmm, rand((2, 7, 3), dtype), A, B, beta=0.3, alpha=-1, reduce=5)
    check(torch.matmul, A, b, reduce=5)
    check(F.linear, a, rand((4, 5), dtype), rand((4,), dtype), reduce=5)
    check(torch.mm, torch.empty(0, 5, dtype=dtype), b)
    check(torch.mm, rand((3, 0), dtype), rand((0, 4), dtype))


def test_blas_out_inplace():
    a, b, c = rand((7, 5), F32), rand((5, 3), F32), rand((7, 3), F32)
    _out(torch.mm, a, b)
    _out(torch.addmm, c, a, b, alpha=0.5)
    _out(torch.mv, a, rand((5,), F32))
    A, B, C = rand((2, 7, 5), F32), rand((2, 5, 3), F32), rand((2, 7, 3), F32)
    _out(torch.bmm, A, B)
    _out(torch.baddbmm, C, A, B, beta=2.0)
    y = c.clone().to(DEV)
    y.addmm_(a.to(DEV), b.to(DEV), beta=0.5)
    assert_close(y, torch.addmm(c.double(), a.double(), b.double(), beta=0.5), reduce=5)
    y = C.clone().to(DEV)
    y.baddbmm_(A.to(DEV), B.to(DEV))
    assert_close(y, torch.baddbmm(C.double(), A.double(), B.double()), reduce=5)
    big = rand((1000, 37), F32)
    check(torch.mm, big, rand((37, 9), F32), reduce=37)


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


def _assign(t, key, v):
    t = t.clone()
    t[key] = v
    return t


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


def test_building_ops():
    for dtype in (F32, F16, torch.int64, torch.int32):
        check(lambda d: torch.arange(3, 20, 2, dtype=dtype, device=d), "cpu")
        check(lambda d: torch.full((3, 4), 7, dtype=dtype, device=d), "cpu")
        check(lambda d: torch.zeros((2, 3), dtype=dtype, device=d), "cpu")
        check(lambda d: torch.ones((0, 3), dtype=dtype, device=d), "cpu")
    check(lambda d: torch.arange(-1.0, 1.0, 0.25, device=d), "cpu")
    out = torch.empty(0, device=DEV)
    torch.arange(0, 10, 3, out=out)
    assert torch.equal(out.cpu(), torch.arange(0.0, 10, 3))
    x = rand((4, 6), F32).to(DEV)
    x[:, ::2].fill_(2.5)
    x[1].zero_()
    assert (x.cpu()[:, ::2][[0, 2, 3]] == 2.5).all() and (x.cpu()[1] == 0).all()
    b = torch.empty(5, dtype=torch.bool, device=DEV).fill_(True)
    assert b.cpu().all()
    check(lambda t: F.one_hot(t, 6), torch.tensor([0, 5, 2, 2]))
    check(F.embedding, torch.tensor([[0, 3], [2, 2]]), rand((4, 3), F32))
    for dt in (F16, BF16, torch.int32, torch.int64, torch.bool, torch.float64, torch.uint8):
        check(lambda t: t.to(dt), rand((5, 3), F32, -5, 5))
        check(lambda t: t.t().to(dt), rand((5, 3), F32, -5, 5))
        check(lambda t: t.to(F32), rand((5, 3), dt if dt != torch.uint8 else torch.int32))


def test_pointwise_layouts():
    a = rand((1000, 37), F32)
    b = rand((37,), F32)
    check(torch.add, a, b)
    check(torch.mul, a.t(), rand((1000,), F32))
    check(torch.exp, a[::3, 1::2])
    check(torch.where, a > 0, a, b)
    check(torch.add, torch.empty(0, 3), torch.empty(1, 3))
    check(torch.exp, torch.empty(0))
    check(torch.mul, torch.tensor(2.5), torch.tensor(-1.5))
    check(torch.add, torch.tensor(2.5), rand((3, 1), F32))
    check(torch.add, rand((3, 1), F32), rand((1, 4), F32))
    check(torch.sigmoid, rand((2, 3, 4), F32).permute(2, 0, 1))
    check(torch.add, rand((4, 3), F16), rand((4, 3), F32))  # type promotion
    check(torch.mul, rand((4, 3), torch.int32), 2.5)
    check(torch.add, rand((4, 3), BF16)[:, 1], torch.tensor(1.0))


def test_softmax_norm_forward():
    x = rand((7, 13), F32, noncontig=True)
    for fn in (torch.softmax, torch.log_softmax):
        check(fn, x, 1, reduce=13)
        check(fn, x, 0, reduce=7)
        check(fn, x.half(), 1, reduce=13)
        check(fn, x.bfloat16(), 1, dtype=BF16, reduce=13)
        check(lambda t: fn(t, 1, dtype=F32), x.half(), reduce=13)
        same = fn(x, 1)
        out = torch.empty_like(same).to(DEV)
        aten = torch.ops.aten._softmax if fn is torch.softmax else torch.ops.aten._log_softmax
        aten.out(x.to(DEV), 1, False, out=out)
        assert_close(out, fn(x.double(), 1), reduce=13)
    check(F.layer_norm, rand((3, 1000), F32), (1000,), reduce=1000)
    check(F.group_norm, rand((2, 6, 37), F32), 3, reduce=74)
    check(F.rms_norm, rand((4, 33), F32), (33,), rand((33,), F32), reduce=33)


def test_fused_adamw():
    torch.manual_seed(0)
    params = [rand((5, 3), F32), rand((7,), F32)]
    grads_ = [rand((5, 3), F32), rand((7,), F32)]
    results = {}
    for dev in ("cpu", DEV):
        ps = [p.clone().to(dev) for p in params]
        gs = [g.clone().to(dev) for g in grads_]
        ea = [torch.zeros_like(p) for p in ps]
        eas = [torch.zeros_like(p) for p in ps]
        mx = []  # max_exp_avg_sqs: amsgrad only
        steps = [torch.tensor(0.0, device=dev) for _ in ps]
        for _ in range(3):
            for s in steps:
                s += 1
            torch._fused_adamw_(
                ps,
                gs,
                ea,
                eas,
                mx,
                steps,
                lr=1e-2,
                beta1=0.9,
                beta2=0.999,
                weight_decay=0.1,
                eps=1e-8,
                amsgrad=False,
                maximize=False,
            )
        lr = torch.tensor(1e-2, device=dev)
        torch._fused_adamw_(
            ps,
            gs,
            ea,
            eas,
            mx,
            steps,
            lr=lr,
            beta1=0.9,
            beta2=0.999,
            weight_decay=0.1,
            eps=1e-8,
            amsgrad=False,
            maximize=False,
        )
        results[dev] = [t.cpu() for t in ps + ea + eas]
    for a, b in zip(results[DEV], results["cpu"]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    # the optimiser front end
    for fused in (True, False):
        w = torch.nn.Parameter(params[0].clone().to(DEV))
        opt = torch.optim.AdamW([w], lr=1e-2, fused=fused)
        w.grad = grads_[0].clone().to(DEV)
        opt.step()
        wc = torch.nn.Parameter(params[0].clone())
        optc = torch.optim.AdamW([wc], lr=1e-2)
        wc.grad = grads_[0].clone()
        optc.step()
        torch.testing.assert_close(w.detach().cpu(), wc.detach(), rtol=1e-5, atol=1e-6)
