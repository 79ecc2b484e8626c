"""ops/weight_norm.py: weight normalisation (the fused op torch takes for dim 0 and the
last dim, and its backward) against the CPU, through both of torch's APIs."""

import pytest
import torch
from torch import nn

from helpers import DEV, grads

F32, F64 = torch.float32, torch.float64


@pytest.mark.parametrize("dim", [0, 2, -1])
def test_weight_norm_forward_backward(dim):
    torch.manual_seed(0)
    v = torch.randn(4, 3, 5)
    g_shape = [1, 1, 1] if dim == -1 else [4 if dim == 0 else 1, 1, 5 if dim == 2 else 1]
    g = torch.rand(g_shape) + 0.5
    for dtype in (F32, F64):
        grads(lambda v, g: torch._weight_norm(v, g, dim), v, g, dtype=dtype)


def test_fused_op_returns_the_norms():
    v = torch.randn(6, 4, dtype=torch.float64)
    g = torch.randn(6, 1, dtype=torch.float64)
    w, norms = torch._weight_norm_interface(v.to(DEV), g.to(DEV), 0)
    torch.testing.assert_close(norms.cpu(), v.norm(dim=1, keepdim=True))
    torch.testing.assert_close(w.cpu(), v * g / v.norm(dim=1, keepdim=True))
    with pytest.raises(RuntimeError, match="takes dim 0 or 2"):
        torch._weight_norm_interface(
            torch.randn(2, 3, 4, device=DEV), torch.randn(1, 3, 1, device=DEV), 1
        )


def test_weight_norm_modules_train_like_cpu():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 16)
    for make in (
        lambda: nn.utils.parametrizations.weight_norm(nn.Conv1d(3, 4, 3)),
        lambda: nn.utils.weight_norm(nn.Linear(16, 5), dim=0),
    ):
        torch.manual_seed(2)
        cpu = make()
        torch.manual_seed(2)
        dev = make().to(DEV)
        cpu(x).square().sum().backward()
        dev(x.to(DEV)).square().sum().backward()
        for (name, p), q in zip(cpu.named_parameters(), dev.parameters()):
            torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-4, rtol=1e-4, msg=name)
