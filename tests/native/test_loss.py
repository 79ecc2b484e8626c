"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the loss
family (nll/cross entropy, binary cross entropy, smooth l1/huber, multi
margin, mse)."""

import math

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, assert_close, check, grads, rand, same
from helpers import grads as _grads


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def test_losses_backward():
    x = rand((8, 5), F32)
    y = torch.randint(0, 5, (8,))
    grads(lambda t, y: F.cross_entropy(t, y), x, y, reduce=8)
    grads(lambda t, y: F.cross_entropy(t, y, reduction="sum"), x, y, reduce=8)
    grads(lambda t, y: F.nll_loss(F.log_softmax(t, 1), y, reduction="none"), x, y)
    y[2] = -100
    grads(lambda t, y: F.cross_entropy(t, y, ignore_index=-100), x, y, reduce=8)
    w = rand((5,), F32, 0.5, 2)
    grads(lambda t, w, y: F.nll_loss(t, y, weight=w), x, w, y, reduce=8, const=(1,))
    tgt = rand((8, 5), F32)
    grads(lambda a, b: F.mse_loss(a, b), x, tgt, reduce=40)
    grads(lambda a, b: F.mse_loss(a, b, reduction="sum"), x, tgt, reduce=40)
    grads(lambda a, b: F.mse_loss(a, b, reduction="none"), x, tgt)
    grads(
        lambda a, b: F.mse_loss(a, b, reduction="mean"),
        x.half(),
        tgt.half(),
        dtype=F16,
        reduce=40,
        const=(1,),
    )


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


FLOATS = [F32, F16, BF16]


INF, NAN = math.inf, math.nan


def some_grads(fn, *inputs, **kw):
    gs, ref_gs = _grads(fn, *inputs, **kw)
    assert len(gs) == len(ref_gs) and gs


def edge(dtype, *extra):
    return torch.tensor(
        [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 20.0, -20.0, 80.0, -80.0, INF, -INF, NAN, *extra],
        dtype=torch.float64,
    ).to(dtype)


# Not bfloat16: the composite's (1 - t) * x - log_sigmoid(x) cancels, and the host
# driver's interpreter rounds float32 -> bfloat16 by truncation (an ulp off).
@pytest.mark.parametrize("dtype", [F32, F16])
def test_bce_with_logits(dtype):
    x, t = rand((6, 5), dtype, -8, 8), rand((6, 5), dtype, 0, 1)
    w, pw = rand((5,), dtype, 0.5, 2), rand((5,), dtype, 0.5, 2)
    for red in ("mean", "sum", "none"):
        red_n = 30 if red != "none" else 1
        some_grads(
            lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=red),
            x,
            t,
            dtype=dtype,
            reduce=red_n,
        )
        some_grads(
            lambda a, b, w, pw: F.binary_cross_entropy_with_logits(
                a, b, weight=w, pos_weight=pw, reduction=red
            ),
            x,
            t,
            w,
            pw,
            dtype=dtype,
            reduce=red_n,
            const=(2, 3),
        )


@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_cross_entropy(dtype):
    x, t = rand((7, 6), dtype, 0.02, 0.98, noncontig=True), rand((7, 6), dtype, 0, 1)
    w = rand((6,), dtype, 0.5, 2)
    for red in ("none", "mean", "sum"):
        n = 42 if red != "none" else 1
        check(lambda a, b: F.binary_cross_entropy(a, b, reduction=red), x, t, reduce=n)
        check(
            lambda a, b, w: F.binary_cross_entropy(a, b, weight=w, reduction=red), x, t, w, reduce=n
        )
        some_grads(
            lambda a, b: F.binary_cross_entropy(a, b, reduction=red),
            x,
            t,
            dtype=dtype,
            reduce=n,
            const=(1,),
        )
        some_grads(
            lambda a, b, w: F.binary_cross_entropy(a, b, weight=w, reduction=red),
            x,
            t,
            w,
            dtype=dtype,
            reduce=n,
            const=(1, 2),
        )
    # log clamped at -100: exact 0 and 1 inputs give finite losses
    xe = torch.tensor([0.0, 0.0, 1.0, 1.0, 0.5], dtype=dtype)
    te = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.25], dtype=dtype)
    res = check(lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), xe, te)
    assert torch.isfinite(res.cpu()).all() and res.cpu()[1].item() == 100.0
    # the aten out= forms
    out = torch.empty(0, dtype=dtype, device=DEV)
    r = torch.ops.aten.binary_cross_entropy.out(x.to(DEV), t.to(DEV), w.to(DEV), 2, out=out)
    assert r is out and out.shape == ()
    assert_close(
        out,
        F.binary_cross_entropy(x.double(), t.double(), w.double(), reduction="sum"),
        dtype,
        reduce=42,
        ref_same=F.binary_cross_entropy(x, t, w, reduction="sum"),
    )
    g = rand((7, 6), dtype)
    gi = torch.empty(0, dtype=dtype, device=DEV)
    r = torch.ops.aten.binary_cross_entropy_backward.grad_input(
        g.to(DEV), x.to(DEV), t.to(DEV), None, 0, grad_input=gi
    )
    assert r is gi
    ref = torch.ops.aten.binary_cross_entropy_backward(g.double(), x.double(), t.double(), None, 0)
    assert_close(
        gi, ref, dtype, ref_same=torch.ops.aten.binary_cross_entropy_backward(g, x, t, None, 0)
    )


def test_binary_cross_entropy_errors():
    x, t = torch.rand(4, 3), torch.rand(4, 3)
    with pytest.raises(RuntimeError, match="input should be between 0 and 1"):
        F.binary_cross_entropy((x + 1).to(DEV), t.to(DEV))
    with pytest.raises(RuntimeError, match="input should be between 0 and 1"):
        F.binary_cross_entropy(torch.full((3,), NAN, device=DEV), torch.rand(3, device=DEV))
    with pytest.raises(RuntimeError, match="target should be between 0 and 1"):
        F.binary_cross_entropy(x.to(DEV), (t - 2).to(DEV))
    with pytest.raises(RuntimeError, match="does not match"):
        torch.ops.aten.binary_cross_entropy(x.to(DEV), torch.rand(5, device=DEV))
    with pytest.raises(RuntimeError, match="dtype"):
        torch.ops.aten.binary_cross_entropy(x.to(DEV), t.double().to(DEV))
    with pytest.raises(RuntimeError, match="weight"):
        torch.ops.aten.binary_cross_entropy(x.to(DEV), t.to(DEV), torch.rand(4, device=DEV))
    with pytest.raises(ValueError):  # the Python-level size check, before dispatch
        F.binary_cross_entropy(x.to(DEV), torch.rand(4, 1, device=DEV))
    # CPU raises for the same inputs
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x + 1, t)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("loss", ["smooth_l1", "huber"])
def test_smooth_l1_huber(dtype, loss):
    fn = F.smooth_l1_loss if loss == "smooth_l1" else F.huber_loss
    key = "beta" if loss == "smooth_l1" else "delta"
    x, t = rand((6, 7), dtype, -3, 3, noncontig=True), rand((6, 7), dtype, -3, 3)
    x[0, :3] = t[0, :3]  # zero difference
    for red in ("none", "mean", "sum"):
        n = 42 if red != "none" else 1
        for param in (1.0, 0.3, 2.5):

            def f(a, b, red=red, param=param):
                return fn(a, b, reduction=red, **{key: param})

            check(f, x, t, reduce=n)
            some_grads(f, x, t, dtype=dtype, reduce=n)
    # broadcast target (PyTorch warns), edge values
    with pytest.warns(UserWarning):
        some_grads(lambda a, b: fn(a, b, reduction="sum"), x, t[:1], dtype=dtype, reduce=42)
    e = edge(dtype)
    check(lambda a, b: fn(a, b, reduction="none"), e, torch.zeros_like(e))
    # the aten out= forms
    out = torch.empty(0, dtype=dtype, device=DEV)
    op = torch.ops.aten.smooth_l1_loss.out if loss == "smooth_l1" else torch.ops.aten.huber_loss.out
    assert op(x.to(DEV), t.to(DEV), 1, 0.5, out=out) is out and out.shape == ()
    assert_close(
        out,
        fn(x.double(), t.double(), **{key: 0.5}),
        dtype,
        reduce=42,
        ref_same=fn(x, t, **{key: 0.5}),
    )
    g = rand((6, 7), dtype)
    bop = (
        torch.ops.aten.smooth_l1_loss_backward
        if loss == "smooth_l1"
        else torch.ops.aten.huber_loss_backward
    )
    gi = torch.empty(0, dtype=dtype, device=DEV)
    kw = {"grad_input": gi}
    r = (bop.grad_input if loss == "smooth_l1" else bop.out)(
        g.to(DEV), x.to(DEV), t.to(DEV), 0, 0.7, **kw
    )
    assert r is gi
    assert_close(
        gi, bop(g.double(), x.double(), t.double(), 0, 0.7), dtype, ref_same=bop(g, x, t, 0, 0.7)
    )


def test_smooth_l1_errors():
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(torch.randn(3, device=DEV), torch.randn(3, device=DEV), beta=-1.0)
    with pytest.raises(RuntimeError, match="values for delta"):
        F.huber_loss(torch.randn(3, device=DEV), torch.randn(3, device=DEV), delta=-1.0)
    with pytest.raises(RuntimeError):
        F.smooth_l1_loss(torch.randn(3, device=DEV), torch.randn(4, device=DEV))
