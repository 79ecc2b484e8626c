"""ops/amax_backward.py and the autograd kernel of amax/amin (csrc/aten/AmaxAmin.cpp):
gradients against the CPU in float64 (ties, NaN, -inf, all-equal lanes), the fused
backward's launches counted, its one-tile, looped and split kernels, launch-plan replays,
double backward and forward-mode AD as PyTorch's formulas give them."""

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import torch_ext
from helpers import DEV, FLOAT_DTYPES, force_spec
from torch_ext.ops import _common, _launch, _rows
from torch_ext.ops import amax_backward as AB

OPS = [torch.amax, torch.amin]


def _input(shape, dtype, seed=0):
    """Small integers (ties in most lanes), a NaN, a -inf lane and an all-equal lane."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g).to(torch.float64)
    flat = x.view(-1)
    if flat.numel() >= 12:
        flat[5] = float("nan")
        flat[-4:] = -float("inf")
        flat[6:9] = 2.0
    return x.to(dtype)


def _check(op, x, dim, keepdim, grad_of=lambda y, g: y.backward(g), view=lambda t: t):
    """The gradient of op(view(x), dim, keepdim) on the device against the CPU's in float64,
    rounded to x's dtype; returns the device's leaf."""
    xr = x.double().requires_grad_()
    yr = op(view(xr), dim, keepdim)
    g = torch.randn(yr.shape, generator=torch.Generator().manual_seed(1)).to(x.dtype)
    grad_of(yr, g.double())
    xd = x.to(DEV).requires_grad_()
    grad_of(op(view(xd), dim, keepdim), g.to(DEV))
    ref = xr.grad.to(x.dtype).double()
    torch.testing.assert_close(xd.grad.cpu().double(), ref, rtol=1e-2, atol=1e-3, equal_nan=True)
    if x.dtype == torch.float32:  # fp32 division rounded as the CPU's
        assert torch.equal(xd.grad.cpu().nan_to_num(7.0), xr.grad.float().nan_to_num(7.0))
    return xd


CASES = [
    ((6, 33), 1),  # one dim, innermost
    ((6, 33), 0),  # one dim, 33 lanes apart
    ((4, 5, 6), (1, 2)),  # adjacent dims
    ((4, 5, 6), (0, 1)),
    ((4, 5, 6), ()),  # every dim
    ((4, 5, 6), (2, 0)),  # not adjacent: a permuted copy
    ((), ()),
    ((7,), -1),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", OPS)
def test_gradients_match_cpu(op, keepdim, dtype):
    for shape, dim in CASES:
        _check(op, _input(shape, dtype), dim, keepdim)


@pytest.mark.parametrize("op", OPS)
def test_grad_layouts_and_noncontiguous_inputs(op):
    x = _input((9, 14), torch.float32)
    _check(op, x, 1, False, grad_of=lambda y, g: y.sum().backward())  # stride-0 grad
    _check(op, x, 1, True, grad_of=lambda y, g: (y * 3).mean().backward())
    _check(op, x, (1,), False, grad_of=lambda y, g: y.unsqueeze(0).expand(3, 9).sum().backward())
    x3 = _input((6, 5, 4), torch.float16)
    _check(op, x3, 2, False, grad_of=lambda y, g: y.t().backward(g.t()))  # a strided grad
    _check(op, x, 0, False, view=lambda t: t.t())  # transposed input
    _check(op, x, 1, False, view=lambda t: t[:, ::2])  # sliced input
    _check(op, x3, (0, 1), False, view=lambda t: t.permute(2, 0, 1))


@pytest.mark.parametrize(
    "shape,view,dim,launches",
    [
        ((6, 5), lambda t: t, [1], 1),
        ((6, 5), lambda t: t.t(), [0], 1),  # dense with the kept dims first: read in place
        ((6, 5, 4), lambda t: t, [0, 2], 2),  # not adjacent: a permuted copy, then the kernel
    ],
)
def test_layouts_as_the_fake_says(shape, view, dim, launches):
    """The gradient comes back in the layout the op read (the inverse view of a permuted
    input), and the fake kernel says so."""
    x = view(torch.randn(shape, device=DEV))
    y = torch.amax(x, dim)
    g = torch.ones_like(y)
    before = _launch.launches()
    got = torch.ops.torch_ext.amax_backward(g, x, y, dim, False)
    assert _launch.launches() - before == launches
    fake = AB.amax_backward_fake(g, x.to("meta"), y, dim, False)
    assert got.shape == fake.shape and got.stride() == fake.stride()


def test_zero_sized_and_inference():
    x = torch.zeros(0, 5, device=DEV, requires_grad=True)
    torch.amax(x, 1).sum().backward()
    assert x.grad.shape == (0, 5)
    y = torch.randn(4, 6)
    with torch.no_grad():
        assert torch.equal(torch.amax(y.to(DEV), 1).cpu(), torch.amax(y, 1))
    with torch.inference_mode():
        assert torch.equal(torch.amin(y.to(DEV), 0).cpu(), torch.amin(y, 0))
    n = torch.randint(-9, 9, (5, 7))
    assert torch.equal(torch.amax(n.to(DEV), 1).cpu(), torch.amax(n, 1))


def _ops_called(fn):
    """The aten/torch_ext ops fn dispatches (a TorchDispatchMode below autograd)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    with Spy():
        fn()
    return seen


@pytest.mark.parametrize(
    "shape,dim",
    [((64, 300), 1), ((8, 40, 30), 1), ((8, 40, 30), (1, 2)), ((20, 30), ())],
)
def test_backward_launches_once_and_replays(shape, dim):
    x = torch.randn(shape, device=DEV, requires_grad=True)
    g = torch.randn(torch.amax(x.detach(), dim).shape, device=DEV)

    def backward():
        return torch.autograd.grad(torch.amax(x, dim), x, g)[0]

    ops = _ops_called(backward)
    assert "torch_ext.amax_backward" in ops and "aten.eq" not in ops, ops
    backward()  # the plan recorded: the calls below replay it
    stats = dict(torch_ext._C._plan_stats())
    y = torch.amax(x, dim)
    before = _launch.launches()
    torch.autograd.grad(y, x, g)
    assert _launch.launches() - before == 1  # one tile a lane: one read, one write
    now = dict(torch_ext._C._plan_stats())
    assert now["recorded"] == stats["recorded"] and now["replayed"] > stats["replayed"]


def test_one_plan_serves_other_sizes():
    """Declared shapes=True: rows of other lengths (one guard region) replay one plan."""
    torch_ext._C._plan_clear()
    recorded = 0
    for n in range(40, 46):  # no multiple of 16, one power of two above: one region
        x = torch.randn(5, n)
        xd = x.to(DEV).requires_grad_()
        y = torch.amax(xd, 1)
        g = torch.ones_like(y)
        before = dict(torch_ext._C._plan_stats())
        (got,) = torch.autograd.grad(y, xd, g)
        recorded += torch_ext._C._plan_stats()["recorded"] - before["recorded"]
        xr = x.double().requires_grad_()
        torch.amax(xr, 1).sum().backward()
        assert torch.equal(got.cpu().double(), xr.grad)
    assert recorded <= 2, torch_ext._C._plan_stats()["reasons"]


@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape,dim", [((5, 300), 1), ((3, 70, 17), 1), ((40, 30), ())])
def test_looped_and_split_kernels(shape, dim, dtype, splits, monkeypatch):
    """Lanes over a small forced one-tile cap count their ties in chunks of R (split over
    `splits` programs, then totalled per lane) and write in a second launch."""
    force_spec(monkeypatch, _rows, row_tile_cap=64)
    force_spec(monkeypatch, _common, reduction_block=64)
    force_spec(monkeypatch, AB, reduction_splits=splits)
    names = []
    launch = AB.launch
    monkeypatch.setattr(
        AB, "launch", lambda k, *a, **kw: names.append(k.fn.__name__) or launch(k, *a, **kw)
    )
    for op in OPS:
        torch_ext._C._plan_clear()  # the kernels' Python runs: nothing replays
        _check(op, _input(shape, dtype, seed=3), dim, False)
    assert names == ["_amax_count_kernel", "_amax_bwd_kernel"] * 2


@pytest.mark.parametrize("op", OPS)
def test_double_backward_and_forward_ad_as_pytorch(op):
    x = _input((6, 10), torch.float32)
    w = torch.randn(6, 10)
    results = []
    for dev in ("cpu", DEV):
        xd = x.double().to(dev).requires_grad_()
        g = torch.randn(6, generator=torch.Generator().manual_seed(2)).double().to(dev)
        g.requires_grad_()
        (gx,) = torch.autograd.grad(op(xd, 1), xd, g, create_graph=True)
        (gg,) = torch.autograd.grad((gx * w.double().to(dev)).nansum(), g)
        with fwAD.dual_level():
            t = torch.randn(6, 10, generator=torch.Generator().manual_seed(4)).double()
            dual = fwAD.make_dual(x.double().to(dev), t.to(dev))
            jvp = fwAD.unpack_dual(op(dual, 1)).tangent
        results.append([r.detach().cpu() for r in (gx, gg, jvp)])
    for a, b in zip(*results):
        torch.testing.assert_close(b, a, equal_nan=True)
