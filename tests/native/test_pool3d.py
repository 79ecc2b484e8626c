"""3-d max and average pooling (torch_ext/ops/pooling/pool3d.py) on the device against
CPU: kernel/stride/padding/dilation, ceil_mode, count_include_pad,
divisor_override, unbatched inputs, NaN, gradients and errors."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401

from helpers import DEV


def check(fn, x, dtype=torch.float32, tol=1e-5):
    x = x.to(dtype)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    rc, rd = fn(xc), fn(xd)
    rc0 = rc[0] if isinstance(rc, tuple) else rc
    rd0 = rd[0] if isinstance(rd, tuple) else rd
    torch.testing.assert_close(rd0.cpu(), rc0.detach(), rtol=tol, atol=tol, equal_nan=True)
    if isinstance(rc, tuple):
        assert torch.equal(rd[1].cpu(), rc[1])
    g = torch.randn(rc0.shape).to(dtype)
    rc0.backward(g)
    rd0.backward(g.to(DEV))
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=2),
        dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=1),
        dict(kernel_size=3, stride=2, padding=1, dilation=2),
        dict(kernel_size=2, stride=2, ceil_mode=True),
    ],
)
def test_max_pool3d(kw):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 8, 9)
    check(lambda t: F.max_pool3d(t, return_indices=True, **kw), x)
    check(lambda t: F.max_pool3d(t, **kw), x[0])  # unbatched (C, D, H, W)


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
        dict(kernel_size=(3, 2, 2), stride=2, padding=1, ceil_mode=True),
        dict(kernel_size=2, stride=1, divisor_override=3),
    ],
)
def test_avg_pool3d(kw):
    torch.manual_seed(1)
    check(lambda t: F.avg_pool3d(t, **kw), torch.randn(2, 3, 7, 8, 9))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_pool3d_half(dtype):
    """fp16/bf16 on the device against the float32 CPU result of the same
    (rounded) input: PyTorch's CPU has no half avg_pool3d."""
    torch.manual_seed(2)
    x = torch.randn(1, 2, 6, 6, 6).to(dtype)
    for fn in (lambda t: F.max_pool3d(t, 2), lambda t: F.avg_pool3d(t, 3, 1, 1)):
        r = fn(x.to(DEV))
        assert r.dtype == dtype
        torch.testing.assert_close(r.cpu().float(), fn(x.float()), rtol=2e-2, atol=2e-2)


def test_max_pool3d_nan_and_local_response_norm():
    x = torch.randn(1, 1, 4, 4, 4)
    x[0, 0, 1, 1, 1] = float("nan")
    r = F.max_pool3d(x.to(DEV), 2, return_indices=True)
    c = F.max_pool3d(x, 2, return_indices=True)
    torch.testing.assert_close(r[0].cpu(), c[0], equal_nan=True)
    assert torch.equal(r[1].cpu(), c[1])
    y = torch.randn(2, 6, 5, 5)
    torch.testing.assert_close(
        F.local_response_norm(y.to(DEV), 3).cpu(), F.local_response_norm(y, 3), rtol=1e-5, atol=1e-6
    )


def test_pool3d_errors():
    x = torch.randn(1, 1, 4, 4, 4, device=DEV)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="too small"):
        F.max_pool3d(torch.randn(1, 1, 1, 1, 1, device=DEV), 3)
    with pytest.raises(RuntimeError):
        F.avg_pool3d(torch.randn(4, 4, device=DEV), 2)
