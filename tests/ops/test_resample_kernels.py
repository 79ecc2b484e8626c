"""Kernel-level tests of the resample family (interpolation, grid_sample,
padding), forward and backward, called through the registry on `device` (CPU
tensors under Triton's interpreter by default; tests/ops/conftest.py) against
PyTorch's CPU kernels in float64."""

import pytest
import torch

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

aten = torch.ops.aten
F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("size,align", [([9, 4], False), ([5, 11], True), ([7, 6], False)])
def test_upsample_bilinear2d_forward_backward(size, align, dtype, device):
    x = randn((2, 3, 7, 6), dtype, device, noncontig=True)
    rx = to_ref(x).requires_grad_()
    rout = aten.upsample_bilinear2d(rx, size, align, None, None)
    out = torch.empty(rout.shape, dtype=dtype, device=device)
    KERNELS["upsample_bilinear2d"](x, size, align, None, None, out)
    assert_close(out, rout.detach(), dtype, reduce_dim=4)
    g = randn(rout.shape, dtype, device)
    rout.backward(to_ref(g))
    gi = torch.empty(x.shape, dtype=dtype, device=device)
    KERNELS["upsample_bilinear2d_backward"](g, size, list(x.shape), align, None, None, gi)
    assert_close(gi, rx.grad, dtype, reduce_dim=8)


@pytest.mark.parametrize("size", [[13], [4]])
def test_upsample_nearest1d(size, device):
    x = randn((2, 3, 7), F32, device)
    out = torch.empty(2, 3, size[0], device=device)
    KERNELS["upsample_nearest1d"](x, size, None, out)
    assert_close(out, aten.upsample_nearest1d(to_ref(x), size, None), F32)


@pytest.mark.parametrize("mode", [0, 1])  # bilinear, nearest
@pytest.mark.parametrize("padding", [0, 1, 2])  # zeros, border, reflection
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_2d_forward_backward(mode, padding, align, device):
    x = randn((2, 3, 5, 6), F64, device)
    grid = randn((2, 4, 3, 2), F64, device, low=-1.2, high=1.2)
    rx, rg = to_ref(x).requires_grad_(), to_ref(grid).requires_grad_()
    rout = aten.grid_sampler_2d(rx, rg, mode, padding, align)
    out = KERNELS["grid_sampler_2d"](x, grid, mode, padding, align)
    assert_close(out, rout.detach(), F64)
    g = randn(rout.shape, F64, device)
    rout.backward(to_ref(g))
    gi, gg = KERNELS["grid_sampler_2d_backward"](g, x, grid, mode, padding, align, [True, True])
    assert_close(gi, rx.grad, F64)
    if mode == 0:  # bilinear: the grid gradient too (nearest has none)
        assert_close(gg, rg.grad, F64)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("pad", [[2, 1, 0, 3], [1, 1, 1, 1]])
def test_reflection_pad2d_forward_backward(pad, dtype, device):
    x = randn((2, 3, 5, 4), dtype, device, noncontig=True)
    rx = to_ref(x).requires_grad_()
    rout = aten.reflection_pad2d(rx, pad)
    assert_close(KERNELS["reflection_pad2d"](x, pad), rout.detach(), dtype)
    g = randn(rout.shape, dtype, device)
    rout.backward(to_ref(g))
    assert_close(KERNELS["reflection_pad2d_backward"](g, x, pad), rx.grad, dtype, reduce_dim=4)


def test_replication_pad1d(device):
    x = randn((2, 3, 5), F32, device)
    out = torch.empty(2, 3, 10, device=device)
    KERNELS["replication_pad1d"](x, [3, 2], out)
    assert_close(out, aten.replication_pad1d(to_ref(x), [3, 2]), F32)
