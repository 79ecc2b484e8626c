"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the pointwise
family's special functions and activation stubs."""

import math

import pytest

import torch
import torch.nn.functional as F

from torch_ext.ops import special
from torch_ext.ops import activation, binary, loss

from helpers import FLOAT_DTYPES, randn, to_ref
from helpers import assert_kernel_close as assert_close


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


INF, NAN = math.inf, math.nan


UNARY = [
    ("lgamma", torch.lgamma, (-12, 12)),
    ("digamma", torch.digamma, (-12, 12)),
    ("i0", torch.i0, (-40, 40)),
    ("special_i0e", torch.special.i0e, (-80, 80)),
    ("special_i1", torch.special.i1, (-40, 40)),
    ("special_i1e", torch.special.i1e, (-80, 80)),
    ("sinc", torch.sinc, (-8, 8)),
    ("special_erfcx", torch.special.erfcx, (-20, 40)),
    ("special_log_ndtr", torch.special.log_ndtr, (-40, 12)),
    ("special_ndtri", torch.special.ndtri, (0, 1)),
]


EDGES = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -2.5, 0.5, 1e-6, 30.0, -30.0, 1e4, INF, -INF, NAN]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.float64])
@pytest.mark.parametrize("name,ref_fn,domain", UNARY, ids=[u[0] for u in UNARY])
def test_special_unary(name, ref_fn, domain, dtype, device):
    op = getattr(special, name)
    x = torch.cat(
        [
            torch.linspace(*domain, 1000, dtype=torch.float64),
            torch.tensor(EDGES, dtype=torch.float64),
        ]
    ).to(dtype)
    res = op(x.to(device))
    # (erfcx/log_ndtr/ndtri: PyTorch has float32/float64 kernels only; the reference in float64)
    ref = ref_fn(to_ref(x)).to(dtype)
    assert_close(res, ref, dtype)
    # the iterator convention on a strided view
    xs = randn((13, 9), dtype, device, *domain, noncontig=True)
    out = torch.empty((13, 9), dtype=dtype, device=device).t().contiguous().t()
    op.iter((out,), (xs,), dtype)
    assert_close(out, ref_fn(to_ref(xs)).to(dtype), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma(n, dtype, device):
    x = torch.cat(
        [
            torch.linspace(-8.3, 12, 500, dtype=torch.float64),
            torch.tensor([0.5, 1e-3, 30.0, 250.0, NAN], dtype=torch.float64),
        ]
    ).to(dtype)
    out = torch.empty_like(x, device=device)
    special.polygamma((out,), (x.to(device),), dtype, n)
    assert_close(out, torch.polygamma(n, to_ref(x)).to(dtype), dtype)
    poles = torch.tensor([0.0, -1.0, -4.0], dtype=dtype, device=device)
    special.polygamma((poles,), (poles.clone(),), dtype, n)
    if n == 0:
        assert poles.cpu()[0] == -INF and poles.cpu()[1:].isnan().all()
    else:
        assert (poles.cpu() == (INF if n % 2 else -INF)).all()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.float64])
def test_nextafter(dtype, device):
    a = torch.tensor([0.0, 0.0, 1.0, -1.0, INF, NAN, 1.0, -0.0, 3.0, 1e-3], dtype=dtype)
    b = torch.tensor([1.0, -1.0, 2.0, -2.0, 0.0, 0.0, 1.0, 5.0, -3.0, 0.0], dtype=dtype)
    out = torch.empty_like(a, device=device)
    binary.nextafter((out,), (a.to(device), b.to(device)), dtype)
    ref = torch.nextafter(a, b)
    idt = {2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    ok = ~ref.isnan()
    assert torch.equal(out.cpu().isnan(), ~ok)
    assert torch.equal(out.cpu()[ok].view(idt), ref[ok].view(idt))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_gcd(dtype, device):
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, (2000,), dtype=dtype)
    b = torch.randint(info.min, info.max, (2000,), dtype=dtype)
    a[:4] = torch.tensor([0, 0, info.min, info.max]).to(dtype)
    b[:4] = torch.tensor([0, 5, 0, info.max - 1]).to(dtype)
    out = torch.empty_like(a, device=device)
    binary.gcd((out,), (a.to(device), b.to(device)), dtype)
    assert torch.equal(out.cpu(), torch.gcd(a, b))
    with pytest.raises(RuntimeError, match="integer"):
        binary.gcd((out.float(),), (a.float().to(device), b.float().to(device)), torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_zeta(dtype, device):
    x = (torch.rand(3000, dtype=torch.float64) * 40 + 1.01).to(dtype)
    q = (torch.rand(3000, dtype=torch.float64) * 30 + 1e-3).to(dtype)
    x[:500] = x[:500].round() + 1  # integer orders with negative q
    q[:500] = -q[:500]
    out = torch.empty_like(x, device=device)
    special.special_zeta((out,), (x.to(device), q.to(device)), dtype)
    assert_close(
        out,
        torch.special.zeta(to_ref(x), to_ref(q)).to(dtype),
        dtype,
        rtol=1e-5 if dtype == torch.float32 else 1e-10,
    )
    special.special_zeta((out[:1],), (2.0, q[:1].to(device)), dtype)  # a number operand
    assert_close(out[:1], torch.special.zeta(2.0, to_ref(q[:1])).to(dtype), dtype)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_lcm(dtype, device):
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, (2000,), dtype=dtype)
    b = torch.randint(info.min, info.max, (2000,), dtype=dtype)
    a[:3], b[1] = 0, 0
    out = torch.empty_like(a, device=device)
    binary.lcm((out,), (a.to(device), b.to(device)), dtype)
    assert torch.equal(out.cpu(), torch.lcm(a, b))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_activation_stubs(dtype, device):
    x, t, g = (randn((37, 5), dtype, device, -8, 8) for _ in range(3))
    rx, rt, rg = to_ref(x), to_ref(t), to_ref(g)
    assert_close(activation.mish(x), F.mish(rx), dtype)
    xr = rx.clone().requires_grad_()
    F.mish(xr).backward(rg)
    assert_close(activation.mish_backward(g, x), xr.grad, dtype)
    assert_close(
        loss.smooth_l1(x, t, 0.7), F.smooth_l1_loss(rx, rt, reduction="none", beta=0.7), dtype
    )
    assert_close(loss.huber(x, t, 0.7), F.huber_loss(rx, rt, reduction="none", delta=0.7), dtype)
    assert_close(
        loss.smooth_l1_backward(x, t, g, 0.5, 0.7),
        torch.ops.aten.smooth_l1_loss_backward(rg, rx, rt, 0, 0.7) * 0.5,
        dtype,
    )
    assert_close(
        loss.huber_backward(x, t, g, 0.5, 0.7),
        torch.ops.aten.huber_loss_backward(rg, rx, rt, 0, 0.7) * 0.5,
        dtype,
    )
    w = randn((5,), dtype, device, -1, 1)
    assert_close(activation.prelu(x, w), F.prelu(rx, to_ref(w)), dtype)
    gx, gw = activation.prelu_backward(x, w.expand(x.shape), g)
    rgx, rgw = torch.ops.aten._prelu_kernel_backward(rg, rx, to_ref(w))
    assert_close(gx, rgx, dtype)
    assert_close(gw, torch.where(rx > 0, 0.0, rx * rg), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_plain_ops(dtype, device):
    x = randn((6, 8), dtype, device, -6, 6)
    rx = to_ref(x)
    out, buf = activation.log_sigmoid_forward(x)
    assert_close(out, F.logsigmoid(rx), dtype)
    g = randn((6, 8), dtype, device)
    ref_b = torch.ops.aten.log_sigmoid_backward(
        to_ref(g), rx, torch.ops.aten.log_sigmoid_forward(rx)[1]
    )
    assert_close(activation.log_sigmoid_backward(g, x, buf), ref_b, dtype)
    assert_close(
        activation.glu_backward(g[:, :4], x, 1),
        torch.ops.aten.glu_backward(to_ref(g[:, :4]), rx, 1),
        dtype,
    )
    o = torch.empty((6, 4), dtype=dtype, device=device)
    activation.glu_out(x, 1, o)
    assert_close(o, F.glu(rx, 1), dtype)
    p, y = randn((6, 8), dtype, device, 0.01, 0.99), randn((6, 8), dtype, device, 0, 1)
    w = randn((8,), dtype, device, 0.5, 2)
    for red in (0, 1, 2):
        ref = torch.ops.aten.binary_cross_entropy(to_ref(p), to_ref(y), to_ref(w), red)
        assert_close(
            loss.binary_cross_entropy(p, y, w, red), ref, dtype, reduce_dim=48 if red else 1
        )
        refb = torch.ops.aten.binary_cross_entropy_backward(
            to_ref(g) if red == 0 else torch.tensor(0.7, dtype=torch.float64),
            to_ref(p),
            to_ref(y),
            to_ref(w),
            red,
        )
        gg = g if red == 0 else torch.tensor(0.7, dtype=dtype, device=device)
        assert_close(loss.binary_cross_entropy_backward(gg, p, y, w, red), refb, dtype)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        loss.binary_cross_entropy(p + 1, y)
