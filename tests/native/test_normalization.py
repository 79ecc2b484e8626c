"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
normalization family (batch, layer, group, rms norm)."""

import math

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


def _launches(fn):
    from torch_ext.ops import _launch

    before = _launch.launches()
    out = fn()
    return out, _launch.launches() - before


@pytest.mark.parametrize(
    "shape,cl",
    [((3, 4, 7), None), ((3, 4, 5, 6), None), ((3, 4, 5, 6), torch.channels_last),
     ((2, 4, 3, 2, 5), None)],
    ids=["1d", "2d", "2d-cl", "3d"],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm_as_group_norm(shape, cl, dtype, affine):
    """F.instance_norm on the device normalises through group norm with a group per
    channel (csrc/aten/InstanceNorm.cpp): two launches forward and two backward, affine
    or not, where PyTorch's composite repeats the weight and bias first (four each way);
    a channels_last input is laid out contiguously once (at most one more launch each
    way: that copy, and the gradient laid out as the input; whether a driver counts a
    copy as a launch differs); the output is contiguous, as the composite's; output and
    gradients against CPU float64."""
    x = rand(shape, dtype)
    if cl:
        x = x.contiguous(memory_format=cl)
    n = math.prod(shape[2:])
    if affine:
        w, b = rand((4,), dtype), rand((4,), dtype)
        grads(lambda t, w, b: F.instance_norm(t, weight=w, bias=b), x, w, b, dtype=dtype, reduce=n)
    else:
        grads(lambda t: F.instance_norm(t), x, dtype=dtype, reduce=n)
    xd = x.to(DEV).requires_grad_()
    wd, bd = (rand((4,), dtype).to(DEV).requires_grad_() for _ in range(2))
    kw = {"weight": wd, "bias": bd} if affine else {}
    y, fwd = _launches(lambda: F.instance_norm(xd, **kw))
    g = torch.ones_like(y)
    _, bwd = _launches(lambda: y.backward(g))
    if cl:
        assert fwd <= 3 and bwd <= 3, (fwd, bwd)
        assert xd.grad.is_contiguous(memory_format=cl)
    else:
        assert (fwd, bwd) == (2, 2)
    assert y.is_contiguous()


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_instance_norm_running_stats(dtype):
    """InstanceNorm with running stats: training updates them in one launch after group
    norm's two (momentum 0.3, each sample's unbiased variance averaged over the batch, as
    PyTorch's composite leaves them); eval normalises by them in one launch (batch
    norm's eval); both against CPU float64."""
    torch.manual_seed(0)
    ref = torch.nn.InstanceNorm3d(4, momentum=0.3, track_running_stats=True, affine=True)
    dev = torch.nn.InstanceNorm3d(4, momentum=0.3, track_running_stats=True, affine=True)
    with torch.no_grad():
        ref.weight.uniform_(0.5, 1.5)
        ref.bias.uniform_(-1, 1)
    dev.load_state_dict(ref.state_dict())
    ref, dev = ref.double(), dev.to(DEV, dtype)
    for step in range(2):
        x = torch.randn(3, 4, 2, 3, 5, dtype=torch.float64) * (step + 1) + 0.5
        want = ref(x)
        got, n = _launches(lambda: dev(x.to(DEV, dtype)))
        assert n == 3
        tol = 1e-5 if dtype == F32 else 3e-2
        torch.testing.assert_close(got.cpu().double(), want, rtol=tol, atol=tol)
        torch.testing.assert_close(dev.running_mean.cpu().double(), ref.running_mean,
                                   rtol=tol, atol=1e-6 if dtype == F32 else 1e-2)  # fmt: skip
        torch.testing.assert_close(dev.running_var.cpu().double(), ref.running_var,
                                   rtol=tol, atol=1e-6 if dtype == F32 else 1e-2)  # fmt: skip
    ref.eval()
    dev.eval()
    x = torch.randn(2, 4, 3, 3, 2, dtype=torch.float64)
    got, n = _launches(lambda: dev(x.to(DEV, dtype)))
    assert n == 1
    torch.testing.assert_close(got.cpu().double(), ref(x), rtol=tol, atol=tol)


def test_instance_norm_autocast_mix():
    """A bf16 input with float32 weight, bias and running stats (autocast's mix) takes
    group norm too (two launches forward, two backward): output bf16, parameter
    gradients float32, running stats updated; against CPU float64."""
    x = torch.randn(2, 3, 4, 4).to(BF16)
    w, b = torch.rand(3) + 0.5, torch.randn(3)
    xd, wd, bd = (t.to(DEV).requires_grad_() for t in (x, w, b))
    rm, rv = torch.zeros(3, device=DEV), torch.ones(3, device=DEV)
    y, n = _launches(lambda: torch.instance_norm(xd, wd, bd, None, None, True, 0.1, 1e-5, False))
    assert n == 2 and y.dtype == BF16
    xr, wr, br = (t.double().requires_grad_() for t in (x, w, b))
    yr = torch.instance_norm(xr, wr, br, None, None, True, 0.1, 1e-5, False)
    torch.testing.assert_close(y.cpu().double(), yr, rtol=3e-2, atol=3e-2)
    g = torch.randn(y.shape)
    _, n = _launches(lambda: y.backward(g.to(DEV, BF16)))
    yr.backward(g.double())
    assert n == 2 and wd.grad.dtype == torch.float32
    torch.testing.assert_close(wd.grad.cpu().double(), wr.grad, rtol=2e-2, atol=5e-2)
    torch.testing.assert_close(bd.grad.cpu().double(), br.grad, rtol=2e-2, atol=5e-2)
    torch.instance_norm(xd.detach(), wd, bd, rm, rv, True, 0.1, 1e-5, False)
    want = 0.9 + 0.1 * x.double().var((2, 3), unbiased=True).mean(0)
    torch.testing.assert_close(rv.cpu().double(), want, rtol=1e-2, atol=1e-2)


def test_instance_norm_other_calls_take_the_composite():
    """Calls the group-norm path does not take (float16 parameters beside a bf16 input,
    one element a channel) still run natively through PyTorch's composite, and match
    CPU."""
    x = torch.randn(2, 3, 4, 4).to(BF16)
    w, b = torch.rand(3).half() + 0.5, torch.randn(3).half()
    got, n = _launches(lambda: torch.instance_norm(x.to(DEV), w.to(DEV), b.to(DEV), None, None,
                                                   True, 0.1, 1e-5, False))  # fmt: skip
    want = torch.instance_norm(x.double(), w.double(), b.double(), None, None, True, 0.1, 1e-5,
                               False)  # fmt: skip
    assert got.dtype == BF16 and n > 2  # the composite's repeats and batch norm
    torch.testing.assert_close(got.cpu().double(), want, rtol=3e-2, atol=3e-2)
    x1 = torch.randn(3, 2, 1)
    args = (None, None, None, None, True, 0.1, 1e-5, False)
    got = torch.instance_norm(x1.to(DEV), *args)
    torch.testing.assert_close(got.cpu(), torch.instance_norm(x1, *args))
