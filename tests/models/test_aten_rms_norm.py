"""aten::rms_norm is composite in PyTorch; on the device it runs the fused
Triton kernel (manifest entry + autograd kernel in torch_ext/fused.py)."""

import pytest
import torch

import torch_ext  # noqa: F401
from torch_ext.coverage import calls_during

from helpers import DEV


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("with_weight", [True, False])
def test_rms_norm_forward_backward_fused(dtype, tol, with_weight):
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    w = torch.randn(16, dtype=torch.float64) if with_weight else None
    xs = x.to(dtype).requires_grad_()
    xd = x.to(dtype).to(DEV).requires_grad_()
    ws = w.to(dtype).requires_grad_() if with_weight else None
    wd = w.to(dtype).to(DEV).requires_grad_() if with_weight else None
    calls = calls_during(lambda: torch.nn.functional.rms_norm(xd, (16,), wd, 1e-6).sum().backward())
    assert calls.get("torch_ext::rms_norm") == 1, calls  # the fused kernel, not the decomposition
    assert "aten::rsqrt" not in calls and "aten::pow.Tensor_Scalar" not in calls, calls
    torch.nn.functional.rms_norm(xs, (16,), ws, 1e-6).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xs.grad, atol=tol, rtol=tol)
    if with_weight:
        torch.testing.assert_close(wd.grad.cpu(), ws.grad, atol=tol * 10, rtol=tol)


def test_rms_norm_inference_mode_uses_the_fused_forward():
    x = torch.randn(4, 32)
    with torch.inference_mode():
        calls = calls_during(lambda: torch.nn.functional.rms_norm(x.to(DEV), (32,)))
        y = torch.nn.functional.rms_norm(x.to(DEV), (32,))
    assert calls.get("aten::rms_norm") == 1 and "aten::rsqrt" not in calls, calls
    torch.testing.assert_close(y.cpu(), torch.nn.functional.rms_norm(x, (32,)))


def test_rms_norm_without_gradients_builds_no_graph():
    """No input needs a gradient (torch.no_grad with a module's weight, or plain tensors):
    the fused forward alone, its result right and without a grad_fn."""
    x, w = torch.randn(4, 32), torch.randn(32)
    wd = w.to(DEV).requires_grad_()
    with torch.no_grad():
        y = torch.nn.functional.rms_norm(x.to(DEV), (32,), wd)
    assert y.grad_fn is None and not y.requires_grad
    torch.testing.assert_close(y.cpu(), torch.nn.functional.rms_norm(x, (32,), w))
    y = torch.nn.functional.rms_norm(x.to(DEV), (32,), w.to(DEV))
    assert y.grad_fn is None
    torch.testing.assert_close(y.cpu(), torch.nn.functional.rms_norm(x, (32,), w))
    y = torch.nn.functional.rms_norm(x.to(DEV), (32,), wd)  # the weight wants one
    assert y.grad_fn is not None
