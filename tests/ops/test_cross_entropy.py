"""ops/cross_entropy.py and its autograd kernel (csrc/aten/CrossEntropy.cpp):
F.cross_entropy on privateuseone runs the fused kernels for (N, C) inputs with class
indices, and PyTorch's composite for everything else; losses and gradients against the
CPU in float64, launches counted, errors as PyTorch's."""

import pytest
import torch
import torch.nn.functional as F

from torch_ext.ops import _launch

DEV = "privateuseone"


def _launches(fn):
    """Kernels launched by a call of fn (Python launches and plan replays alike)."""
    before = _launch.launches()
    out = fn()
    return out, _launch.launches() - before


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_fused_loss_and_gradient_match_cpu(dtype, reduction):
    g = torch.Generator().manual_seed(0)
    n, c = 37, 5003  # two steps of a row, the second partial
    x = torch.randn(n, c, generator=g, dtype=torch.float64) * 3
    t = torch.randint(0, c, (n,), generator=g)
    t[[3, 11, 30]] = -100  # ignored rows
    xr = x.clone().requires_grad_()
    ref = F.cross_entropy(xr, t, reduction=reduction)
    go = torch.randn(ref.shape, generator=g, dtype=torch.float64)
    ref.backward(go)
    xd = x.to(dtype).to(DEV).requires_grad_()
    got = F.cross_entropy(xd, t.to(DEV), reduction=reduction)
    assert got.dtype == dtype and got.shape == ref.shape
    got.backward(go.to(dtype).to(DEV))
    tol = 1e-5 if dtype == torch.float32 else 3e-2
    scale = ref.detach().abs().max()
    assert (got.detach().cpu().double() - ref.detach()).abs().max() <= tol * scale
    gscale = xr.grad.abs().max()
    assert (xd.grad.cpu().double() - xr.grad).abs().max() <= tol * gscale
    assert torch.all(xd.grad.cpu()[[3, 11, 30]] == 0)


def test_the_fused_path_is_taken_and_launches_few_kernels():
    x = torch.randn(64, 300, device=DEV, requires_grad=True)
    t = torch.randint(0, 300, (64,)).to(DEV)
    ops = _ops_called(lambda: F.cross_entropy(x, t))
    assert "torch_ext.cross_entropy" in ops and "aten.log_softmax" not in ops, ops
    F.cross_entropy(x, t).backward()  # recorded once: the count below replays
    x.grad = None
    loss, fwd = _launches(lambda: F.cross_entropy(x, t))
    assert fwd == 1  # the rows; the last row program to finish adds their mean
    _, bwd = _launches(lambda: loss.backward())
    assert bwd <= 2  # the gradient (and the grad_output's ones)


def test_the_mean_counts_rows_of_zero_loss_and_skips_ignored_ones():
    """The last row program counts the rows whose loss it adds: an ignored row is marked
    -0.0 in the float32 scratch, so a counted row whose loss is exactly 0 (a logit far
    above the rest) must still count; all rows ignored give nan, as PyTorch."""
    x = torch.zeros(6, 5)
    x[:, 0] = 200.0  # rows 0-5 with target 0: loss exactly 0.0 in float32
    t = torch.tensor([0, 0, -100, 0, 1, -100])
    for reduction in ("mean", "sum"):
        ref = F.cross_entropy(x, t, reduction=reduction)
        for _ in range(2):  # the arrival counter re-arms between launches
            got = F.cross_entropy(x.to(DEV), t.to(DEV), reduction=reduction).cpu()
            assert torch.allclose(got, ref, rtol=1e-6, atol=0), (reduction, got, ref)
    assert F.cross_entropy(x[:2].to(DEV), t[:2].to(DEV)).cpu().item() == 0.0
    none = torch.full((3,), -100)
    assert F.cross_entropy(x[:3].to(DEV), none.to(DEV)).cpu().isnan()
    assert F.cross_entropy(x[:3].to(DEV), none.to(DEV), reduction="sum").cpu().item() == 0.0


def test_other_calls_take_the_composite_and_stay_exact():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 7, generator=g, dtype=torch.float64)
    t = torch.randint(0, 7, (6,), generator=g)
    w = torch.rand(7, generator=g, dtype=torch.float64)
    probs = torch.softmax(torch.randn(6, 7, generator=g, dtype=torch.float64), 1)
    x3 = torch.randn(2, 7, 3, generator=g, dtype=torch.float64)
    t3 = torch.randint(0, 7, (2, 3), generator=g)
    cases = [
        lambda x, t: F.cross_entropy(x, t, weight=w.to(x.device).to(x.dtype)),
        lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
        lambda x, t: F.cross_entropy(x, probs.to(x.device).to(x.dtype)),
    ]
    for case in cases:
        xr = x.clone().requires_grad_()
        ref = case(xr, t)
        ref.backward()
        xd = x.float().to(DEV).requires_grad_()
        ops = _ops_called(lambda: case(xd, t.to(DEV)))
        assert "torch_ext.cross_entropy" not in ops, ops
        got = case(xd, t.to(DEV))
        got.backward()
        torch.testing.assert_close(got.detach().cpu().double(), ref.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(xd.grad.cpu().double(), xr.grad, rtol=1e-5, atol=1e-6)
    xr = x3.clone().requires_grad_()
    ref = F.cross_entropy(xr, t3)
    ref.backward()
    xd = x3.float().to(DEV).requires_grad_()
    got = F.cross_entropy(xd, t3.to(DEV))
    got.backward()
    torch.testing.assert_close(xd.grad.cpu().double(), xr.grad, rtol=1e-5, atol=1e-6)


def test_inference_and_edge_cases():
    x = torch.randn(5, 9)
    t = torch.tensor([1, -100, 8, 0, -100])
    with torch.no_grad():
        got = F.cross_entropy(x.to(DEV), t.to(DEV), reduction="sum")
    torch.testing.assert_close(got.cpu(), F.cross_entropy(x, t, reduction="sum"))
    with torch.inference_mode():
        got = F.cross_entropy(x.to(DEV), t.to(DEV))
    torch.testing.assert_close(got.cpu(), F.cross_entropy(x, t))
    # every row ignored: the mean is 0/0 as on the CPU, the gradient zero
    xd = x.to(DEV).requires_grad_()
    none = torch.full((5,), -100)
    got = F.cross_entropy(xd, none.to(DEV))
    assert torch.isnan(got.cpu()) and torch.isnan(F.cross_entropy(x, none))
    got.backward()
    assert torch.all(xd.grad.cpu() == 0)
    # a row of -inf logits but its target's: a finite loss
    y = torch.full((1, 4), -float("inf"))
    y[0, 2] = 1.0
    got = F.cross_entropy(y.to(DEV), torch.tensor([2]).to(DEV))
    assert got.item() == 0.0


def test_bad_targets_raise_as_pytorch_does():
    x = torch.randn(4, 6, device=DEV, requires_grad=True)
    with pytest.raises(IndexError, match="Target 6 is out of bounds"):  # as on the CPU
        F.cross_entropy(x, torch.tensor([0, 6, 1, 2]).to(DEV))
        torch.privateuseone.synchronize()
    with pytest.raises((RuntimeError, ValueError), match="batch_size"):
        F.cross_entropy(x, torch.tensor([0, 1, 2]).to(DEV))


def test_forward_step_is_the_drivers_by_logit_size(monkeypatch):
    """The forward's step along a row comes from the driver by the logits' size
    (`cross_entropy_block`, the GPU's 8Ki for 16-bit logits), capped at the padded row,
    and the loss is the same; the backward keeps its own step."""
    from helpers import force_spec, spy_launches
    from torch_ext.ops import cross_entropy as CE

    force_spec(monkeypatch, CE, cross_entropy_block=32)
    calls = spy_launches(monkeypatch, CE)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 200, generator=g, dtype=torch.float64) * 3
    t = torch.randint(0, 200, (6,), generator=g)
    ref = F.cross_entropy(x, t, reduction="none")
    loss, _, _ = CE.cross_entropy_fwd(x.to(torch.bfloat16).to(DEV), t.to(DEV), 0, -100)
    assert (loss.cpu().double() - ref).abs().max() <= 3e-2 * ref.abs().max()
    assert [kw["BLOCK"] for k, kw in calls if k is CE._ce_rows_kernel] == [32]
    assert CE._block(200) == 256 and CE._block(100000) == CE._BLOCK
