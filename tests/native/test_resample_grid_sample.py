"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
resample family: grid_sample (2-d and 3-d)."""

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, grads, rand


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


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


DTYPES = [F32, F16, BF16]


SIZES_1D = {
    "size_up": dict(size=17),
    "size_down": dict(size=4),
    "size_same": dict(size=6),
    "scale_up": dict(scale_factor=3.0),
    "scale_down": dict(scale_factor=0.5),
    "scale_kept_up": dict(scale_factor=2.2, recompute_scale_factor=False),
    "scale_kept_down": dict(scale_factor=0.45, recompute_scale_factor=False),
    "scale_kept_double": dict(scale_factor=2.1, recompute_scale_factor=False),
    "scale_kept_same": dict(scale_factor=1.1, recompute_scale_factor=False),
}


# PyTorch's CPU 1-d nearest backward copies/halves indices where out == in or
# out == 2 * in whatever the scale, its forward does not: its gradient there
# is not the forward's adjoint (test_nearest_1d_kept_scale_is_adjoint).
MODES_1D = [("linear", False), ("linear", True), ("nearest", None), ("nearest-exact", None)]


CASES_1D = [
    (c, m, a)
    for c in SIZES_1D
    for m, a in MODES_1D
    if not (m == "nearest" and c in ("scale_kept_double", "scale_kept_same"))
]


CL3 = torch.channels_last_3d


@pytest.mark.parametrize(
    "mode,padding",
    [(m, p) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")],
)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_grid_sample_3d(mode, padding, align, dtype):
    x = rand((2, 2, 3, 4, 5), dtype)
    grid = rand((2, 3, 2, 4, 3), dtype, -1.3, 1.3)
    fn = lambda t, g: F.grid_sample(t, g, mode=mode, padding_mode=padding, align_corners=align)  # noqa: E731
    grads(fn, x, grid, dtype=dtype, reduce=64 if dtype != F32 else 16)


def test_grid_sample_3d_layouts_and_errors():
    grads(
        lambda t, g: F.grid_sample(
            t.contiguous(memory_format=CL3), g.transpose(1, 3), align_corners=True
        ),
        rand((1, 3, 3, 4, 5), F32),
        rand((1, 4, 2, 3, 3), F32, -1.2, 1.2),
        reduce=16,
    )
    grads(
        lambda t, g: F.grid_sample(t, g, mode="nearest"),
        rand((2, 3, 3, 4, 5), F32),
        rand((2, 3, 2, 4, 3), F32),
        const=(0,),
    )
    for dev in ("cpu", DEV):
        with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
            torch.grid_sampler_3d(
                torch.randn(1, 2, 3, 4, 5).to(dev), torch.rand(1, 2, 2, 2, 3).to(dev), 2, 0, False
            )
    with pytest.raises(RuntimeError, match="expected grid to have size 3 in last dimension"):
        torch.grid_sampler_3d(
            torch.randn(1, 2, 3, 4, 5).to(DEV), torch.rand(1, 2, 2, 2, 2).to(DEV), 0, 0, False
        )
