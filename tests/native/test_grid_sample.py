"""F.grid_sample (grid_sampler_2d and its backward) on the device against CPU:
every interpolation and padding mode, align_corners both ways, grid points
outside [-1, 1], a strided input, and both gradients."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401

from helpers import DEV


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_forward_and_backward(mode, padding, align):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 7, dtype=torch.float64)
    grid = torch.rand(2, 4, 6, 2, dtype=torch.float64) * 2.6 - 1.3  # some points outside
    kw = dict(mode=mode, padding_mode=padding, align_corners=align)
    xc, gc = x.clone().requires_grad_(), grid.clone().requires_grad_()
    xd, gd = x.to(DEV).requires_grad_(), grid.to(DEV).requires_grad_()
    rc, rd = F.grid_sample(xc, gc, **kw), F.grid_sample(xd, gd, **kw)
    torch.testing.assert_close(rd.cpu(), rc.detach(), rtol=1e-9, atol=1e-9)
    w = torch.randn(rc.shape, dtype=torch.float64)
    (rc * w).sum().backward()
    (rd * w.to(DEV)).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(gd.grad.cpu(), gc.grad, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_grid_sample_dtypes_and_strided_input(dtype):
    torch.manual_seed(1)
    x = torch.randn(1, 4, 6, 6).to(dtype)
    theta = torch.tensor([[[0.9, 0.2, 0.1], [-0.1, 1.1, 0.0]]]).to(dtype)
    grid = F.affine_grid(theta, (1, 4, 8, 8), align_corners=False)
    xs = x.to(DEV).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # channels-last strides
    ref = F.grid_sample(x.float(), grid.float(), align_corners=False)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(
        F.grid_sample(xs, grid.to(DEV), align_corners=False).cpu().float(), ref, rtol=tol, atol=tol
    )


def test_grid_sample_errors():
    with pytest.raises(RuntimeError):
        F.grid_sample(
            torch.randn(1, 1, 3, 3, device=DEV),
            torch.randn(2, 2, 2, 2, device=DEV),
            align_corners=False,
        )
