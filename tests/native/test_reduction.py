"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
reduction family (reductions, statistics, norms, scans:
cumsum/cumprod/cummax/cummin/logcumsumexp)."""

import pytest

import torch

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, assert_close, check, rand, same, to_dev, to_f64


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_cumprod(dtype):
    x = (
        (torch.rand(4, 7, dtype=torch.float64) + 0.5).to(dtype)
        if dtype.is_floating_point
        else torch.randint(1, 3, (4, 7), dtype=dtype)
    )
    for dim in (0, 1, -1):
        torch.testing.assert_close(x.to(DEV).cumprod(dim).cpu(), x.cumprod(dim))
    y = x.to(DEV).t()
    y.cumprod_(0)
    torch.testing.assert_close(y.cpu(), x.t().cumprod(0))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf")])
def test_norm_out_overloads(p):
    x = torch.randn(4, 9)
    out = torch.empty(0, device=DEV)
    torch.ops.aten.norm.out(x.to(DEV), p, [1], False, out=out)
    torch.testing.assert_close(out.cpu(), torch.ops.aten.norm.ScalarOpt_dim(x, p, [1], False))
    out64 = torch.empty(0, dtype=torch.float64, device=DEV)
    torch.ops.aten.norm.dtype_out(x.to(DEV), p, [0], True, dtype=torch.float64, out=out64)
    torch.testing.assert_close(
        out64.cpu(), torch.ops.aten.norm.ScalarOpt_dim_dtype(x, p, [0], True, dtype=torch.float64)
    )


nan, inf = float("nan"), float("inf")


def dev(x):
    return x.to(DEV)


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
