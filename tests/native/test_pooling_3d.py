"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the pooling
family, 3-d (max/avg/adaptive pool3d, local response norm)."""

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, grads, rand


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


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


DTYPES = [F32, F16, BF16]


CL3 = torch.channels_last_3d


@pytest.mark.parametrize("size", [(1, 1, 1), (2, 3, 4), (5, 7, 3), (4, 2, 9)])  # input 4 x 5 x 6
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_pool3d(size, dtype):
    x = rand((2, 3, 4, 5, 6), dtype)
    grads(lambda t: torch._adaptive_avg_pool3d(t, size), x, dtype=dtype, reduce=120)
    grads(lambda t: F.adaptive_avg_pool3d(t, size), x, dtype=dtype, reduce=120)
    grads(lambda t: F.adaptive_max_pool3d(t, size), x, dtype=dtype)
    _, i = F.adaptive_max_pool3d(x.to(DEV), size, return_indices=True)
    assert torch.equal(i.cpu(), F.adaptive_max_pool3d(x, size, return_indices=True)[1])


def test_adaptive_pool3d_layouts_batch1_and_errors():
    f = lambda t: t.contiguous(memory_format=CL3)  # noqa: E731
    grads(
        lambda t: torch._adaptive_avg_pool3d(f(t), (3, 2, 4)), rand((1, 3, 4, 5, 6), F32), reduce=8
    )
    grads(
        lambda t: F.adaptive_max_pool3d(t.transpose(-1, -3), (3, 2, 4)), rand((1, 3, 4, 5, 6), F32)
    )
    grads(
        lambda t: F.adaptive_avg_pool3d(t, (5, 2, 7)), rand((3, 4, 5, 6), F32), reduce=8
    )  # no batch
    out = torch._adaptive_avg_pool3d(f(rand((2, 3, 4, 4, 4), F32).to(DEV)), (2, 2, 2))
    assert out.is_contiguous(memory_format=CL3)
    with pytest.raises(RuntimeError, match="Expected 4D or 5D tensor"):
        torch._adaptive_avg_pool3d(torch.randn(4, 4, 4).to(DEV), (2, 2, 2))
    res = torch.ops.aten.adaptive_avg_pool3d.out(
        torch.randn(2, 2, 4, 5, 6).to(DEV), [3, 2, 4], out=torch.empty(0, device=DEV)
    )
    assert res.shape == (2, 2, 3, 2, 4)
