"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
normalization family (batch, layer, group, rms norm)."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, grads, rand


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_norm_backward(dtype):
    x, w, b = rand((4, 6, 10), dtype), rand((10,), dtype), rand((10,), dtype)
    grads(lambda t, w, b: F.layer_norm(t, (10,), w, b, 1e-5), x, w, b, dtype=dtype, reduce=24)
    grads(lambda t: F.layer_norm(t, (6, 10)), x, dtype=dtype, reduce=60)
    w6, b6 = rand((6,), dtype), rand((6,), dtype)
    grads(lambda t, w, b: F.group_norm(t, 3, w, b, 1e-5), x, w6, b6, dtype=dtype, reduce=40)
    grads(lambda t: F.group_norm(t, 2), x, dtype=dtype, reduce=40)


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_train_and_eval(dtype, affine):
    x = rand((4, 3, 5, 6), dtype)
    n = x.numel() // 3
    if affine:
        grads(
            lambda t, w, b: F.batch_norm(t, None, None, w, b, training=True),
            x,
            rand((3,), dtype),
            rand((3,), dtype),
            dtype=dtype,
            reduce=n,
        )
    else:
        grads(lambda t: F.batch_norm(t, None, None, training=True), x, dtype=dtype, reduce=n)

    def eval_bn(t):  # running statistics as constants
        rm = torch.full((3,), 0.5, dtype=t.dtype, device=t.device)
        rv = torch.full((3,), 2.0, dtype=t.dtype, device=t.device)
        return F.batch_norm(t, rm, rv, training=False)

    grads(eval_bn, x, dtype=dtype)


def test_batch_norm_module_running_stats():
    bn, bn_d = torch.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3).to(DEV)
    x = torch.randn(4, 3, 5, 6) * 2 + 1
    for _ in range(2):
        ref, out = bn(x), bn_d(x.to(DEV))
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(bn_d.running_mean.cpu(), bn.running_mean)
    torch.testing.assert_close(bn_d.running_var.cpu(), bn.running_var)
    assert bn_d.num_batches_tracked.item() == 2
    bn.eval()
    bn_d.eval()
    torch.testing.assert_close(bn_d(x.to(DEV)).cpu(), bn(x), rtol=1e-5, atol=1e-5)


def _bn_module_step(mod, x, cl):
    """Two training steps and one eval step of `mod`; (outputs, input grads, params'
    grads, running stats) as CPU float64."""
    if cl:
        x = x.contiguous(memory_format=cl)
    x = x.detach().requires_grad_()
    outs = []
    for train in (True, True, False):
        mod.train(train)
        y = mod(x)
        outs.append(y)
    g = torch.linspace(-1, 1, y.numel(), dtype=torch.float64).reshape(y.shape).to(y)
    (outs[0] * g).sum().backward()
    res = outs + [x.grad] + [p.grad for p in mod.parameters()]
    res += [mod.running_mean, mod.running_var]
    return [t.detach().cpu().double() for t in res], outs[0]


@pytest.mark.parametrize(
    "cls,shape,cl",
    [
        (torch.nn.BatchNorm1d, (6, 4), None),
        (torch.nn.BatchNorm1d, (3, 4, 7), None),
        (torch.nn.BatchNorm2d, (3, 4, 5, 6), None),
        (torch.nn.BatchNorm2d, (3, 4, 5, 6), torch.channels_last),
        (torch.nn.BatchNorm3d, (2, 4, 3, 2, 5), torch.channels_last_3d),
        (torch.nn.InstanceNorm2d, (3, 4, 5, 6), None),
    ],
    ids=["1d", "1d-seq", "2d", "2d-cl", "3d-cl", "instance"],
)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_modules_train_eval(cls, shape, cl, affine):
    """Modules (running stats tracked) on the device against CPU: outputs in train and
    eval, the input's memory format kept, input and parameter grads, running stats."""
    torch.manual_seed(0)
    kw = {"track_running_stats": True} if cls is torch.nn.InstanceNorm2d else {}
    ref = cls(4, affine=affine, **kw).double()
    dev = cls(4, affine=affine, **kw).to(DEV)
    x = torch.randn(shape, dtype=torch.float64) * 2 + 1
    want, _ = _bn_module_step(ref, x, cl)
    got, y = _bn_module_step(dev, x.float().to(DEV), cl)
    if cl:
        assert y.is_contiguous(memory_format=cl)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cl", [False, True])
def test_batch_norm_bf16_autocast_mix(cl):
    """A bf16 activation with fp32 weight, bias and running stats (autocast's mix):
    output bf16, saved statistics and parameter grads fp32, against CPU float64."""
    x = torch.randn(4, 6, 5, 5).to(torch.bfloat16)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    w, b = torch.rand(6) + 0.5, torch.randn(6)
    rm, rv = torch.zeros(6), torch.ones(6)
    xd, wd, bd = (t.to(DEV).requires_grad_() for t in (x, w, b))
    rmd, rvd = rm.to(DEV), rv.to(DEV)
    y = F.batch_norm(xd, rmd, rvd, wd, bd, True, 0.1, 1e-5)
    assert y.dtype == torch.bfloat16
    xr, wr, br = (t.double().requires_grad_() for t in (x, w, b))
    yr = F.batch_norm(xr, rm.double(), rv.double(), wr, br, True, 0.1, 1e-5)
    torch.testing.assert_close(y.cpu().double(), yr, rtol=2e-2, atol=2e-2)
    g = torch.randn(y.shape)
    y.backward(g.to(DEV, torch.bfloat16))
    yr.backward(g.double())
    torch.testing.assert_close(xd.grad.cpu().double(), xr.grad, rtol=3e-2, atol=3e-2)
    assert wd.grad.dtype == torch.float32
    torch.testing.assert_close(wd.grad.cpu().double(), wr.grad, rtol=1e-2, atol=5e-2)
    torch.testing.assert_close(bd.grad.cpu().double(), br.grad, rtol=1e-2, atol=5e-2)
    torch.testing.assert_close(rvd.cpu().double(), rv.double() * 0.9 + 0.1 * xr.detach().var(
        [0, 2, 3]), rtol=1e-3, atol=1e-3)  # fmt: skip


def test_batch_norm_aten_entry_points_native():
    """The aten ops torch.compile/export reach run natively (the suite turns the CPU
    fallback into an error) and match CPU."""
    aten = torch.ops.aten
    x, w, b = torch.randn(3, 4, 5), torch.rand(4) + 0.5, torch.randn(4)
    stats = [torch.zeros(4), torch.ones(4)]
    dstats = [t.to(DEV) for t in stats]
    ref = aten._batch_norm_with_update(x, w, b, *stats, 0.1, 1e-5)
    got = aten._batch_norm_with_update(x.to(DEV), w.to(DEV), b.to(DEV), *dstats, 0.1, 1e-5)
    for a, r in zip(got[:3] + tuple(dstats), ref[:3] + tuple(stats)):
        torch.testing.assert_close(a.cpu(), r, rtol=1e-5, atol=1e-5)
    g = torch.randn(3, 4, 5)
    args = (w, *stats, ref[1], ref[2], True, 1e-5, [True, True, True], ref[3])
    rb = aten.batch_norm_backward(g, x, *args)
    dargs = [a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args]
    dargs[3], dargs[4] = got[1], got[2]
    gb = aten.batch_norm_backward(g.to(DEV), x.to(DEV), *dargs)
    for a, r in zip(gb, rb):
        torch.testing.assert_close(a.cpu(), r, rtol=1e-4, atol=1e-4)
    ref = aten._native_batch_norm_legit(x, w, b, *stats, True, 0.1, 1e-5)
    got = aten._native_batch_norm_legit(x.to(DEV), w.to(DEV), b.to(DEV), *dstats, True, 0.1,
                                        1e-5)  # fmt: skip
    for a, r in zip(got, ref):
        torch.testing.assert_close(a.cpu(), r, rtol=1e-5, atol=1e-5)
    ref = aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5)
    got = aten._native_batch_norm_legit.no_stats(x.to(DEV), w.to(DEV), b.to(DEV), True, 0.1,
                                                 1e-5)  # fmt: skip
    torch.testing.assert_close(got[0].cpu(), ref[0], rtol=1e-5, atol=1e-5)
    ref = aten._batch_norm_no_update(x, w, b, *stats, 0.1, 1e-5)
    got = aten._batch_norm_no_update(x.to(DEV), w.to(DEV), b.to(DEV), *dstats, 0.1, 1e-5)
    torch.testing.assert_close(got[0].cpu(), ref[0], rtol=1e-5, atol=1e-5)


def test_norm_launch_counts():
    """Per call through the dispatcher: batch norm forward 2 launches (eval 1),
    backward 2, or 1 each where the driver keeps a channel's elements in one program's
    registers (the cuda driver's resident kernels at this size); group norm forward 2,
    backward 2."""
    from torch_ext.ops import _launch, batch_norm

    def count(fn):
        before = _launch.launches()
        fn()
        return _launch.launches() - before

    x = torch.randn(4, 6, 5, 5, device=DEV)
    w, b = torch.ones(6, device=DEV), torch.zeros(6, device=DEV)
    rm, rv = torch.zeros(6, device=DEV), torch.ones(6, device=DEV)
    aten = torch.ops.aten
    out = [None]

    def fwd():
        out[0] = aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)

    v, st = batch_norm._view(x)
    plan = batch_norm._Plan(v, [st, st, st])
    bn_launches = [1 if plan.resident(backward) is not None else 2 for backward in (0, 1)]
    assert count(fwd) == bn_launches[0]
    assert count(lambda: aten.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5)) == 1
    _, m, s = out[0]
    g = torch.randn_like(x)
    bwd = lambda: aten.native_batch_norm_backward(g, x, w, rm, rv, m, s, True, 1e-5, [True] * 3)  # noqa: E731
    assert count(bwd) == bn_launches[1]
    gn = [None]

    def gfwd():
        gn[0] = aten.native_group_norm(x, w, b, 4, 6, 25, 3, 1e-5)

    assert count(gfwd) == 2
    _, gm, gs = gn[0]
    gbwd = lambda: aten.native_group_norm_backward(g, x, gm, gs, w, 4, 6, 25, 3, [True] * 3)  # noqa: E731
    assert count(gbwd) == 2
