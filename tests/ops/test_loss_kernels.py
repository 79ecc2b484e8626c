"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the loss family
(nll_loss from loss_nll.py; mse_loss's stub kernels from activation.py)."""

import pytest

import torch

from torch_ext.ops import loss_nll as loss

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close


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
    """mse_loss is PyTorch's structured op over our mse / mse_backward stubs (their
    kernels here, the reduction as PyTorch composes it)."""
    from torch_ext.ops import activation

    a, b = randn((4, 33), torch.float32, device), randn((4, 33), torch.float32, device)
    ref = torch.ops.aten.mse_loss(to_ref(a), to_ref(b), reduction)
    sq = activation.mse(a, b)
    got = sq if reduction == 0 else (sq.mean() if reduction == 1 else sq.sum())
    assert_close(got, ref.float(), reduce_dim=132)
    g = randn(ref.shape, torch.float32, device)
    norm = 2.0 / a.numel() if reduction == 1 else 2.0
    assert_close(
        activation.mse_backward(a, b, g.expand(a.shape), norm),
        torch.ops.aten.mse_loss_backward(to_ref(g), to_ref(a), to_ref(b), reduction).float(),
    )
