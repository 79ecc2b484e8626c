"""Batch norm on the GPU at ResNet-50's shapes (batch 32, bf16 activations, fp32
statistics), NCHW and channels_last, training forward and backward against the CPU in
float64: every kernel design the cuda driver picks by size (one program a channel
block, the two-launch split reduction, and the one-launch kernels whose programs meet at
a barrier, batch_norm_coop.py), the latter called again and again (its counters
re-armed) and with the GPU shared by a kernel on another stream."""

import pytest
import torch
import torch.nn.functional as F

from conftest import DEV
from torch_ext.ops import _launch, batch_norm

SHAPES = [(64, 56), (128, 28), (512, 28), (1024, 14), (2048, 7), (64, 112)]


def _design(x, backward):
    v, st = batch_norm._view(x)
    p = batch_norm._Plan(v, [st, st, st])
    if p.resident(backward) is not None:
        return "resident"
    return "coop" if p.coop(backward) is not None else "split"


@pytest.mark.parametrize("cl", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("c,hw", SHAPES)
def test_batch_norm_at_resnet_shapes(c, hw, cl):
    torch.manual_seed(c + hw)
    fmt = torch.channels_last if cl else torch.contiguous_format
    x = (torch.randn(32, c, hw, hw) * 2 + 0.5).to(torch.bfloat16).contiguous(memory_format=fmt)
    dy = torch.randn_like(x.float()).to(torch.bfloat16).contiguous(memory_format=fmt)
    w, b = torch.rand(c) + 0.5, torch.randn(c)
    xd, dyd = x.to(DEV), dy.to(DEV)
    wd = w.to(DEV).requires_grad_()
    bd = b.to(DEV).requires_grad_()
    rm, rv = torch.zeros(c, device=DEV), torch.ones(c, device=DEV)
    xd.requires_grad_()
    for _ in range(3):  # the counters of the barrier kernels must be re-armed each time
        y = F.batch_norm(xd, rm, rv, wd, bd, True, 0.1, 1e-5)
        gx, gw, gb = torch.autograd.grad(y, (xd, wd, bd), dyd)
    xr = x.double().requires_grad_()
    wr, br = w.double().requires_grad_(), b.double().requires_grad_()
    rmr, rvr = torch.zeros(c, dtype=torch.float64), torch.ones(c, dtype=torch.float64)
    for _ in range(3):
        yr = F.batch_norm(xr, rmr, rvr, wr, br, True, 0.1, 1e-5)
    rx, rw, rb = torch.autograd.grad(yr, (xr, wr, br), dy.double())
    n = 32 * hw * hw

    def close(got, ref, tol):
        err = (got.cpu().double() - ref).abs().max().item()
        assert err <= tol * max(1.0, ref.abs().max().item()), (err, _design(x, False))

    assert y.is_contiguous(memory_format=fmt) and gx.is_contiguous(memory_format=fmt)
    close(y, yr.detach(), 2e-2)
    close(gx, rx, 3e-2)
    close(gw, rw, 1e-3 * n**0.5)
    close(gb, rb, 1e-3 * n**0.5)
    close(rm, rmr, 1e-4)
    close(rv, rvr, 1e-4)
    assert int(_launch.arrival_counters("batch_norm_coop", xd.device).abs().sum().cpu()) == 0


def test_the_barrier_kernels_are_taken():
    """The cuda driver's spec sends ResNet-50's mid-sized maps to the barrier kernels,
    NCHW 28x28 maps (32Ki lanes a channel) to the resident ones (wide lanes)."""
    x = torch.empty(32, 64, 56, 56, dtype=torch.bfloat16, device=DEV)
    assert _design(x, False) == "coop" and _design(x, True) == "coop"
    x28 = torch.empty(32, 128, 28, 28, dtype=torch.bfloat16, device=DEV)
    assert _design(x28, False) == "resident" and _design(x28, True) == "resident"
    cl = x28.contiguous(memory_format=torch.channels_last)
    assert _design(cl, False) == "coop"
    big = torch.empty(32, 64, 112, 112, dtype=torch.bfloat16, device=DEV)
    assert _design(big, False) == "split"


def test_barrier_kernels_beside_another_stream():
    """A long kernel on another stream holds some multiprocessors while the barrier
    kernels run: they wait for them, and finish."""
    a = torch.randn(4096, 4096, device=DEV, dtype=torch.bfloat16)
    x = torch.randn(32, 64, 56, 56).to(torch.bfloat16).to(DEV)
    assert _design(x, False) == "coop"
    rm, rv = torch.zeros(64, device=DEV), torch.ones(64, device=DEV)
    side = torch.privateuseone.Stream()
    ref = F.batch_norm(x, rm.clone(), rv.clone(), None, None, True, 0.1, 1e-5).cpu()
    with torch.privateuseone.stream(side):
        for _ in range(20):
            a = a @ a * 1e-3
    for _ in range(5):
        y = F.batch_norm(x, rm, rv, None, None, True, 0.1, 1e-5)
    torch.privateuseone.synchronize()
    assert torch.equal(y.cpu(), ref)  # deterministic: the same bits every time
