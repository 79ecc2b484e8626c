"""cdist/pdist with their gradients, nll_loss2d, max_unpool2d, rrelu,
triu/tril_indices and normal(mean, std) on the device against CPU
(fallback = error: a pass means the op ran natively)."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401

from helpers import DEV


def same(a, b, **kw):
    assert a.device.type == "privateuseone"
    torch.testing.assert_close(a.cpu(), b, **kw)


def grads(fn, *xs):
    """fn's value and gradients on CPU and on the device."""
    cpu = [x.clone().requires_grad_() for x in xs]
    dev = [x.to(DEV).requires_grad_() for x in xs]
    rc, rd = fn(*cpu), fn(*dev)
    g = torch.randn(rc.shape)
    rc.backward(g)
    rd.backward(g.to(DEV))
    return rc, rd, [x.grad for x in cpu], [x.grad for x in dev]


@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("rows", [(4, 6), (30, 27)])  # 30 > 25: the mm path for p = 2
def test_cdist_forward_backward(p, rows):
    torch.manual_seed(0)
    x1, x2 = torch.randn(2, rows[0], 5), torch.randn(1, rows[1], 5)
    rc, rd, gc, gd = grads(lambda a, b: torch.cdist(a, b, p), x1, x2)
    same(rd, rc.detach(), rtol=1e-4, atol=1e-4)
    if p != 0:
        for a, b in zip(gd, gc):
            same(a, b, rtol=1e-3, atol=1e-4)
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        same(
            torch.cdist(x1.to(DEV), x2.to(DEV), compute_mode=mode),
            torch.cdist(x1, x2, compute_mode=mode),
            rtol=1e-4,
            atol=1e-4,
        )


@pytest.mark.parametrize("p", [1.0, 2.0, 2.5, float("inf")])
def test_pdist_forward_backward(p):
    torch.manual_seed(1)
    x = torch.randn(7, 4)
    rc, rd, gc, gd = grads(lambda a: F.pdist(a, p), x)
    same(rd, rc.detach(), rtol=1e-5, atol=1e-5)
    same(gd[0], gc[0], rtol=1e-4, atol=1e-5)


def test_distance_errors():
    with pytest.raises(RuntimeError, match="same number of columns"):
        torch.cdist(torch.randn(3, 4, device=DEV), torch.randn(3, 5, device=DEV))
    with pytest.raises(RuntimeError, match="non-negative p"):
        torch.cdist(torch.randn(3, 4, device=DEV), torch.randn(3, 4, device=DEV), p=-1)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss2d_and_cross_entropy_on_images(reduction, weighted):
    torch.manual_seed(2)
    x = torch.randn(2, 4, 5, 3)
    t = torch.randint(0, 4, (2, 5, 3))
    t[0, 0, 0] = -100  # ignored
    w = torch.rand(4) if weighted else None
    t2 = torch.where(t == -100, 2, t)
    for fn in (
        lambda a: F.nll_loss(F.log_softmax(a, 1), t_, weight=w_, reduction=reduction),
        lambda a: F.cross_entropy(a, t2_, weight=w_, reduction=reduction, ignore_index=2),
    ):
        t_, t2_, w_ = t, t2, w
        xc = x.clone().requires_grad_()
        rc = fn(xc)
        t_, t2_, w_ = t.to(DEV), t2.to(DEV), (w.to(DEV) if w is not None else None)
        xd = x.to(DEV).requires_grad_()
        rd = fn(xd)
        same(rd, rc.detach(), rtol=1e-5, atol=1e-6)
        rc.sum().backward()
        rd.sum().backward()
        same(xd.grad, xc.grad, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="spatial sizes don't match"):
        F.nll_loss(x.to(DEV), torch.zeros(2, 5, 4, dtype=torch.long, device=DEV))


def test_max_unpool2d_round_trip():
    torch.manual_seed(3)
    x = torch.randn(2, 3, 6, 8)
    v, i = F.max_pool2d(x, 2, return_indices=True)
    same(F.max_unpool2d(v.to(DEV), i.to(DEV), 2), F.max_unpool2d(v, i, 2))
    same(
        F.max_unpool2d(v.to(DEV), i.to(DEV), 2, output_size=(7, 9)),
        F.max_unpool2d(v, i, 2, output_size=(7, 9)),
    )
    with pytest.raises(RuntimeError, match="indices to be same as that of the input"):
        F.max_unpool2d(v.to(DEV), i[..., :2].to(DEV), 2)


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


@pytest.mark.parametrize(
    "row,col,offset", [(4, 4, 0), (3, 5, 1), (5, 3, -2), (0, 3, 0), (4, 6, -10)]
)
def test_tri_indices(row, col, offset):
    for fn in (torch.triu_indices, torch.tril_indices):
        same(fn(row, col, offset, device=DEV), fn(row, col, offset))
    assert torch.triu_indices(3, 3, dtype=torch.int32, device=DEV).dtype == torch.int32


def test_normal_with_tensor_mean_and_std():
    torch.manual_seed(5)
    mean, std = torch.linspace(-5, 5, 4000), torch.linspace(0.5, 2, 4000)
    z = (torch.normal(mean.to(DEV), std.to(DEV)).cpu() - mean) / std
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.1
    z = torch.normal(mean.to(DEV), 2.0).cpu() - mean
    assert abs(z.std() - 2) < 0.15
    z = torch.normal(1.0, std.to(DEV)).cpu() - 1.0
    assert abs((z / std).std() - 1) < 0.1


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(p, reduction, weighted):
    torch.manual_seed(6)
    x = torch.randn(5, 7, dtype=torch.float64)
    t = torch.randint(0, 7, (5,))
    w = torch.rand(7, dtype=torch.float64) if weighted else None

    def fn(a, tt, ww):
        return F.multi_margin_loss(a, tt, p=p, margin=0.7, weight=ww, reduction=reduction)

    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    rc, rd = fn(xc, t, w), fn(xd, t.to(DEV), w.to(DEV) if w is not None else None)
    same(rd, rc.detach(), rtol=1e-10, atol=1e-12)
    rc.sum().backward()
    rd.sum().backward()
    same(xd.grad, xc.grad, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="only p == 1 and p == 2"):  # (F.* checks p itself)
        torch.ops.aten.multi_margin_loss(xd, t.to(DEV), 3)
