"""Losses, random numbers, sort/topk, fused ops and the AdamW step."""

import math

import pytest
import torch
import torch.nn.functional as F

from torch_ext.ops import fused, loss, optim, random, sort

from helpers import FLOAT_DTYPES, randn, to_ref
from helpers import assert_kernel_close as assert_close

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction, weighted, dtype, device):
    x = torch.log_softmax(torch.randn(9, 7), 1).to(dtype).to(device)
    t = torch.randint(0, 7, (9,))
    t[3] = -100
    t = t.to(device)
    w = randn((7,), dtype, device, 0.1, 1) if weighted else None
    ref, rtw = torch.ops.aten.nll_loss_forward(to_ref(x), t.cpu(), to_ref(w), reduction, -100)
    out = torch.empty(ref.shape, dtype=dtype, device=device)
    tw = torch.empty((), dtype=dtype, device=device)
    loss.nll_loss_forward_out(x, t, w, reduction, -100, out, tw)
    assert_close(out, ref.to(dtype), dtype, reduce_dim=9)
    if reduction:
        assert_close(tw, rtw.to(dtype), dtype, reduce_dim=9)
    g = randn(ref.shape, dtype, device)
    gi = torch.empty_like(x)
    loss.nll_loss_backward_out(g, x, t, w, reduction, -100, rtw.to(dtype).to(device), gi)
    rgi = torch.ops.aten.nll_loss_backward(
        to_ref(g), to_ref(x), t.cpu(), to_ref(w), reduction, -100, rtw
    )
    assert_close(gi, rgi.to(dtype), dtype)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_mse_loss(reduction, device):
    a, b = randn((4, 33), torch.float32, device), randn((4, 33), torch.float32, device)
    ref = torch.ops.aten.mse_loss(to_ref(a), to_ref(b), reduction)
    out = torch.empty(ref.shape, device=device)
    loss.mse_loss_out(a, b, reduction, out)
    assert_close(out, ref.float(), reduce_dim=132)
    g = randn(ref.shape, torch.float32, device)
    assert_close(
        loss.mse_loss_backward(g, a, b, reduction),
        torch.ops.aten.mse_loss_backward(to_ref(g), to_ref(a), to_ref(b), reduction).float(),
    )


def test_random_distributions(device):
    n = 20000
    t = torch.empty(n, device=device)
    random.normal(t, 1.0, 2.0)
    assert abs(t.cpu().mean() - 1) < 0.1 and abs(t.cpu().std() - 2) < 0.1
    random.uniform((t,), (), t.dtype, -1, 3)
    tc = t.cpu()
    assert tc.min() >= -1 and tc.max() < 3 and abs(tc.mean() - 1) < 0.1
    random.bernoulli_scalar(t, 0.3)
    assert abs(t.cpu().mean() - 0.3) < 0.02
    p = torch.linspace(0, 1, n).to(device)
    random.bernoulli_tensor(t, p)
    assert abs(t.cpu().mean() - 0.5) < 0.02
    i = torch.empty(n, dtype=torch.int64, device=device)
    random.random_from_to((i,), (), i.dtype, 10, 5)
    ic = i.cpu()
    assert ic.min() == 5 and ic.max() == 14
    random.exponential((t,), (), t.dtype, 2.0)
    assert abs(t.cpu().mean() - 0.5) < 0.05
    out, keep = random.native_dropout(torch.ones(n).to(device), 0.25, True)
    assert abs(keep.cpu().float().mean() - 0.75) < 0.02
    assert_close(out, keep.cpu().float() / 0.75)
    g = randn((n,), torch.float32, device)
    assert_close(random.native_dropout_backward(g, keep, 1 / 0.75), g.cpu() * keep.cpu() / 0.75)


def test_random_reproducible(device, monkeypatch):
    # Same (seed, offset) -> same values; the generator itself is the runtime's.
    state = {"offset": 0}

    def fake_philox(generator, dev, increment):
        offset = state["offset"]
        state["offset"] += increment
        return 1234, offset

    monkeypatch.setattr(random, "philox", fake_philox)
    a = torch.empty(100, device=device)
    random.normal(a, 0.0, 1.0)
    state["offset"] = 0
    b = torch.empty(100, device=device)
    random.normal(b, 0.0, 1.0)
    c = torch.empty(100, device=device)
    random.normal(c, 0.0, 1.0)
    assert torch.equal(a.cpu(), b.cpu()) and not torch.equal(b.cpu(), c.cpu())


def _check_sort_and_topk(x, k):
    """Stable sort along every dim, both orders, and topk(k) along dim 1,
    against the CPU."""
    for dim in range(x.dim()):
        for desc in (False, True):
            v, i = sort.sort(x, dim, desc)
            rv, ri = torch.sort(x.cpu(), stable=True, dim=dim, descending=desc)
            assert_close(v, rv)
            assert_close(i, ri)
    v, i = sort.topk(x, k, 1)
    rv, _ = torch.topk(x.cpu(), k, 1)
    assert_close(v, rv)
    assert_close(torch.gather(x.cpu(), 1, i.cpu()), rv)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_sort_topk(dtype, device):
    x = randn((4, 37, 3), dtype, "cpu", -5, 5)
    if dtype.is_floating_point:
        x = x.round()  # ties exercise stability
        x[0, 3, 0] = math.nan
    x = x.to(device)
    _check_sort_and_topk(x, 5)
    v, i = sort.topk(x, 3, 1, largest=False)
    assert_close(v, torch.topk(x.cpu(), 3, 1, largest=False).values)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int32])
def test_sort_long_rows_merge(dtype, device, monkeypatch):
    # Rows longer than MERGE_FROM take the merge sort (forced here from 40
    # elements, so that odd lengths leave unpaired runs): stable, NaN last
    # (first when descending), along any dim.
    monkeypatch.setattr(sort, "MERGE_FROM", 40)
    x = randn((3, 301, 2), dtype, "cpu", -9, 9)
    if dtype.is_floating_point:
        x = x.round()
        x[1, ::17, 0] = math.nan
    _check_sort_and_topk(x.to(device), 50)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fused(dtype, device):
    x = randn((6, 16), dtype, device)
    xr = to_ref(x)
    assert_close(fused.silu_and_mul(x), (F.silu(xr[:, :8]) * xr[:, 8:]).to(dtype), dtype)
    for approx in ("none", "tanh"):
        assert_close(
            fused.gelu_and_mul(x, approx),
            (F.gelu(xr[:, :8], approximate=approx) * xr[:, 8:]).to(dtype),
            dtype,
        )
        xg = xr.clone().requires_grad_()
        g = randn((6, 8), dtype, device)
        (F.gelu(xg[:, :8], approximate=approx) * xg[:, 8:]).backward(to_ref(g))
        assert_close(fused.gelu_and_mul_backward(g, x, approx), xg.grad.to(dtype), dtype)
    xg = xr.clone().requires_grad_()
    g = randn((6, 8), dtype, device)
    (F.silu(xg[:, :8]) * xg[:, 8:]).backward(to_ref(g))
    assert_close(fused.silu_and_mul_backward(g, x), xg.grad.to(dtype), dtype)
    res = randn((6, 16), dtype, device)
    w, b = randn((16,), dtype, device), randn((16,), dtype, device)
    y, _, _ = fused.skip_layer_norm(x, res, [16], w, b, 1e-5)
    s = (xr + to_ref(res)).to(dtype).double()
    assert_close(
        y, F.layer_norm(s, [16], to_ref(w), to_ref(b), 1e-5).to(dtype), dtype, reduce_dim=2
    )
    y, summed = fused.fused_add_rms_norm(x, res, [16], w, 1e-6)
    assert_close(summed, s.to(dtype), dtype)
    assert_close(y, F.rms_norm(s, [16], to_ref(w), 1e-6).to(dtype), dtype, reduce_dim=2)


@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary(interleaved, device):
    q = randn((2, 5, 3, 8), torch.float32, device)
    ang = torch.rand(5, 1, 4, dtype=torch.float64)
    cos, sin = torch.cos(ang).float().to(device), torch.sin(ang).float().to(device)
    qr, c, s = to_ref(q), to_ref(cos), to_ref(sin)
    if interleaved:
        x1, x2 = qr[..., 0::2], qr[..., 1::2]
        ref = torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], -1).flatten(-2)
    else:
        x1, x2 = qr[..., :4], qr[..., 4:]
        ref = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    out = fused.rotary_embedding(q, cos, sin, interleaved)
    assert_close(out, ref.float())
    back = fused.rotary_embedding_backward(out, cos, sin, interleaved)
    assert_close(back, q.cpu(), atol=1e-5)


@pytest.mark.parametrize("amsgrad,maximize", [(False, False), (True, True)])
def test_fused_adamw(amsgrad, maximize, device):
    ps = [randn((10,), torch.float32, device), randn((3, 4), torch.float32, device)]
    gs = [randn(p.shape, torch.float32, device) for p in ps]
    ref = [p.cpu().clone() for p in ps]
    state = [[torch.zeros(p.shape).to(device) for p in ps] for _ in range(3)]
    rstate = [[torch.zeros(p.shape) for p in ps] for _ in range(3)]
    rsteps = [torch.zeros(()) for _ in ps]
    for _ in range(3):
        for s in rsteps:
            s += 1
        torch._fused_adamw_(
            ref,
            [g.cpu() for g in gs],
            rstate[0],
            rstate[1],
            rstate[2] if amsgrad else [],
            rsteps,
            lr=0.01,
            beta1=0.9,
            beta2=0.99,
            weight_decay=0.1,
            eps=1e-8,
            amsgrad=amsgrad,
            maximize=maximize,
        )
        steps = [torch.full((), float(rsteps[0])).to(device) for _ in ps]
        optim.fused_adamw_(
            ps,
            gs,
            state[0],
            state[1],
            state[2],
            steps,
            0.01,
            0.9,
            0.99,
            0.1,
            1e-8,
            amsgrad,
            maximize,
        )
    for p, r in zip(ps, ref):
        assert_close(p, r, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_long_rows(largest, device):
    x = randn((3, 5000), torch.float32, "cpu").round(decimals=1)  # ties across chunks
    x[1, 4321] = math.nan
    v, i = sort.topk(x.to(device).t(), 10, 0, largest)
    rv = torch.topk(x.t(), 10, 0, largest)
    assert_close(v, rv.values)
    assert_close(torch.gather(x.t(), 0, i.cpu()), rv.values)
    sv, si = torch.sort(x.t(), stable=True, dim=0, descending=largest)
    assert_close(i, si[:10])
