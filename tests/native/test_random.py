"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the random
family (uniform/normal/exponential/bernoulli/random_, randperm/multinomial,
dropout, rrelu, normal with tensor arguments)."""

import math

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, same


def test_rrelu_training_draws_on_the_device_and_eval_matches():
    torch.manual_seed(4)
    x = torch.randn(1000)
    same(F.rrelu(x.to(DEV), training=False), F.rrelu(x, training=False))
    y = F.rrelu(x.to(DEV), 0.1, 0.3, training=True).cpu()
    pos, neg = x >= 0, x < 0
    assert torch.equal(y[pos], x[pos])
    slope = y[neg] / x[neg]
    assert slope.min() >= 0.1 - 1e-6 and slope.max() <= 0.3 + 1e-6 and slope.std() > 0.03
    xd = x.to(DEV).requires_grad_()
    F.rrelu(xd, training=True).sum().backward()
    g = xd.grad.cpu()
    assert torch.equal(g[pos], torch.ones(int(pos.sum()))) and (g[neg] >= 0.125 - 1e-6).all()


def test_normal_with_tensor_mean_and_std():
    torch.manual_seed(5)
    mean, std = torch.linspace(-5, 5, 4000), torch.linspace(0.5, 2, 4000)
    z = (torch.normal(mean.to(DEV), std.to(DEV)).cpu() - mean) / std
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.1
    z = torch.normal(mean.to(DEV), 2.0).cpu() - mean
    assert abs(z.std() - 2) < 0.15
    z = torch.normal(1.0, std.to(DEV)).cpu() - 1.0
    assert abs((z / std).std() - 1) < 0.1


def test_dropout_backward_through_autograd():
    torch.manual_seed(0)
    x = torch.randn(200, device=DEV, requires_grad=True)
    y = torch.nn.functional.dropout(x, p=0.4, training=True)
    y.backward(torch.ones_like(y))
    kept = (y != 0).cpu()
    grad = x.grad.cpu()
    torch.testing.assert_close(grad[kept], torch.full_like(grad[kept], 1 / 0.6))
    assert torch.all(grad[~kept] == 0)
    assert 0.4 < kept.float().mean().item() < 0.8


N = 20000


def _moments(t):
    t = t.cpu().double().flatten()
    return t.mean().item(), t.std().item()


def _near(value, expected, sd, n=N, k=5):
    assert abs(value - expected) <= k * sd / math.sqrt(n), (value, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_uniform_normal_exponential(dtype):
    torch.manual_seed(1)
    x = torch.empty(N, dtype=dtype, device=DEV)
    x.uniform_(-2, 3)
    v = x.cpu().double()
    assert v.min() >= -2 and v.max() <= 3
    m, s = _moments(x)
    _near(m, 0.5, 5 / math.sqrt(12))
    assert abs(s - 5 / math.sqrt(12)) < 0.05
    x.normal_(1.5, 2.0)
    m, s = _moments(x)
    _near(m, 1.5, 2.0)
    assert abs(s - 2.0) < 0.06
    x.exponential_(2.0)
    assert x.cpu().min() >= 0
    m, s = _moments(x)
    _near(m, 0.5, 0.5)
    # a non-contiguous view is filled in place, the rest untouched
    y = torch.zeros(100, 6, dtype=dtype, device=DEV)
    y[:, ::2].uniform_(1, 2)
    assert (y.cpu()[:, 1::2] == 0).all() and (y.cpu()[:, ::2] >= 1).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.bool, torch.int64])
def test_bernoulli(dtype):
    torch.manual_seed(2)
    x = torch.empty(N, dtype=dtype, device=DEV)
    x.bernoulli_(0.3)
    v = x.cpu().double()
    assert set(v.unique().tolist()) <= {0.0, 1.0}
    _near(v.mean().item(), 0.3, math.sqrt(0.21))
    p = torch.linspace(0, 1, N).to(DEV)
    x.bernoulli_(p)
    v = x.cpu().double()
    assert v[0] == 0 and v[-1] == 1
    _near(v.mean().item(), 0.5, 0.5)
    _near(v[: N // 2].mean().item(), 0.25, 0.45, N // 2)
    b = torch.bernoulli(torch.full((N,), 0.8, device=DEV))
    _near(b.cpu().mean().item(), 0.8, 0.4)


@pytest.mark.parametrize(
    "dtype", [torch.int64, torch.int32, torch.uint8, torch.float32, torch.bfloat16]
)
def test_random_(dtype):
    torch.manual_seed(3)
    x = torch.empty(N, dtype=dtype, device=DEV)
    x.random_(3, 10)
    v = x.cpu().double()
    assert v.min() == 3 and v.max() == 9 and torch.equal(v, v.round())
    _near(v.mean().item(), 6.0, math.sqrt((49 - 1) / 12))
    x.random_(5)
    v = x.cpu().double()
    assert v.min() == 0 and v.max() == 4
    x.random_()
    v = x.cpu().double()
    assert v.min() >= 0 and torch.equal(v, v.round()) and v.unique().numel() > 50


def test_randperm_multinomial():
    torch.manual_seed(4)
    for n in (0, 1, 7, 1000):
        p = torch.randperm(n, device=DEV)
        assert p.device.type == DEV and p.dtype == torch.int64
        assert torch.equal(p.cpu().sort().values, torch.arange(n))
    p = torch.randperm(50, device=DEV, dtype=torch.int32)
    assert torch.equal(p.cpu().sort().values, torch.arange(50, dtype=torch.int32))
    assert not torch.equal(torch.randperm(50, device=DEV).cpu(), torch.arange(50))
    w = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]], device=DEV)
    s = torch.multinomial(w, 4000, replacement=True)
    assert s.shape == (2, 4000) and s.dtype == torch.int64
    c = torch.stack([torch.bincount(r, minlength=4) for r in s.cpu()]).double() / 4000
    assert c[0, 1] == 0
    assert (
        c - torch.tensor([[0.1, 0.0, 0.6, 0.3], [0.25] * 4], dtype=torch.float64)
    ).abs().max() < 0.04
    s = torch.multinomial(w, 3, replacement=False)
    assert all(len(set(r.tolist())) == 3 for r in s.cpu())
    assert 1 not in s.cpu()[0].tolist()


def test_dropout_and_seed():
    torch.manual_seed(5)
    x = torch.ones(N, device=DEV)
    out, mask = torch.native_dropout(x, 0.25, True)
    assert mask.dtype == torch.bool
    keep = mask.cpu()
    _near(keep.double().mean().item(), 0.75, math.sqrt(0.75 * 0.25))
    assert torch.equal(out.cpu(), keep.float() / 0.75)
    out, mask = torch.native_dropout(x, 0.25, False)
    assert torch.equal(out.cpu(), x.cpu()) and mask.cpu().all()
    # the same seed gives the same values
    vals = []
    for _ in range(2):
        torch.manual_seed(123)
        vals.append(torch.empty(257, device=DEV).normal_().cpu())
        vals.append(torch.randperm(33, device=DEV).cpu())
    assert torch.equal(vals[0], vals[2]) and torch.equal(vals[1], vals[3])
    g = torch.Generator(device=DEV)
    g.manual_seed(9)
    a = torch.empty(64, device=DEV).uniform_(generator=g).cpu()
    g.manual_seed(9)
    b = torch.empty(64, device=DEV).uniform_(generator=g).cpu()
    assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_cauchy_log_normal_geometric(dtype):
    torch.manual_seed(5)
    x = torch.empty(N, dtype=dtype, device=DEV)
    x.cauchy_(1.5, 2.0)
    v = x.cpu().double()
    # Median 1.5 and half the interquartile range 2.0 (the mean does not exist).
    q1, med, q3 = (v.quantile(q).item() for q in (0.25, 0.5, 0.75))
    assert abs(med - 1.5) < 0.1 and abs((q3 - q1) / 2 - 2.0) < 0.15, (q1, med, q3)
    x.log_normal_(0.5, 0.3)
    v = x.cpu().double()
    assert v.min() > 0
    _near(v.log().mean().item(), 0.5, 0.3)
    assert abs(v.log().std().item() - 0.3) < 0.03
    x.geometric_(0.2)
    v = x.cpu().double()
    assert v.min() == 1 and torch.equal(v, v.round())
    _near(v.mean().item(), 5.0, math.sqrt(0.8) / 0.2)
    xi = torch.empty(N, dtype=torch.int64, device=DEV).geometric_(0.5)
    assert xi.dtype == torch.int64 and xi.cpu().min() == 1
    _near(xi.cpu().double().mean().item(), 2.0, math.sqrt(0.5) / 0.5)


def test_randperm_long():
    # 100k keys: the merge sort (the rank sort would need 10^10 comparisons).
    p = torch.randperm(100_000, device=DEV).cpu()
    assert torch.equal(p.sort().values, torch.arange(100_000))
    assert (p[:-1] > p[1:]).sum() > 40_000  # shuffled, not sorted
