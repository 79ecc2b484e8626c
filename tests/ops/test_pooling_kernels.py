"""Kernel-level tests of the pooling family (max/avg pool 2-d and 3-d, adaptive
avg/max pool 2-d, forward and backward), called through the registry on
`device` (CPU tensors under Triton's interpreter by default; tests/ops/conftest.py)
against PyTorch's CPU kernels in float64. Structured kernels write into outs
sized like the reference's."""

import pytest
import torch

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

aten = torch.ops.aten
F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16
# kernel, stride, padding, dilation, ceil_mode
MAX_CASES = [([2, 2], [2, 2], [0, 0], [1, 1], False), ([3, 2], [2, 1], [1, 1], [1, 2], True)]


def _like(ref, device, dtype):
    return torch.empty(ref.shape, dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("case", MAX_CASES, ids=["k2s2", "padded-dilated-ceil"])
def test_max_pool2d_forward_backward(case, dtype, device):
    k, s, p, d, ceil = case
    x = randn((2, 3, 7, 6), dtype, device, noncontig=True)
    rx = to_ref(x).requires_grad_()
    rout, ridx = aten.max_pool2d_with_indices(rx, k, s, p, d, ceil)
    out, idx = _like(rout, device, dtype), _like(ridx, device, torch.int64)
    KERNELS["max_pool2d_with_indices"](x, k, s, p, d, ceil, out, idx)
    assert_close(out, rout.detach(), dtype)
    assert torch.equal(idx.cpu(), ridx)
    g = randn(rout.shape, dtype, device)
    rout.backward(to_ref(g))
    gi = _like(rx, device, dtype)
    KERNELS["max_pool2d_with_indices_backward"](g, x, k, s, p, d, ceil, idx, gi)
    assert_close(gi, rx.grad, dtype)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("count_include_pad,divisor", [(True, None), (False, None), (True, 3)])
def test_avg_pool2d_forward_backward(count_include_pad, divisor, dtype, device):
    k, s, p = [3, 2], [2, 2], [1, 1]
    x = randn((2, 2, 7, 5), dtype, device)
    rx = to_ref(x).requires_grad_()
    rout = aten.avg_pool2d(rx, k, s, p, True, count_include_pad, divisor)
    out = _like(rout, device, dtype)
    KERNELS["avg_pool2d"](x, *k, *s, *p, True, count_include_pad, divisor, out)
    assert_close(out, rout.detach(), dtype, reduce_dim=6)
    g = randn(rout.shape, dtype, device)
    rout.backward(to_ref(g))
    gi = _like(rx, device, dtype)
    KERNELS["avg_pool2d_backward"](g, x, k, s, p, True, count_include_pad, divisor, gi)
    assert_close(gi, rx.grad, dtype, reduce_dim=6)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("size", [[1, 1], [3, 4], [9, 7]])  # input 7 x 6: down, up
def test_adaptive_avg_pool2d_forward_backward(size, dtype, device):
    x = randn((2, 3, 7, 6), dtype, device, noncontig=True)
    rx = to_ref(x).requires_grad_()
    rout = aten._adaptive_avg_pool2d(rx, size)
    out = KERNELS["_adaptive_avg_pool2d"](x, size)
    assert_close(out, rout.detach(), dtype, reduce_dim=8)
    g = randn(rout.shape, dtype, device)
    rout.backward(to_ref(g))
    assert_close(KERNELS["_adaptive_avg_pool2d_backward"](g, x), rx.grad, dtype, reduce_dim=8)


@pytest.mark.parametrize("size", [[1, 1], [3, 4]])
def test_adaptive_max_pool2d_forward_backward(size, device):
    x = randn((2, 3, 7, 6), F32, device)
    rx = to_ref(x).requires_grad_()
    rout, ridx = aten.adaptive_max_pool2d(rx, size)
    out, idx = _like(rout, device, F32), _like(ridx, device, torch.int64)
    KERNELS["adaptive_max_pool2d"](x, size, out, idx)
    assert_close(out, rout.detach(), F32)
    assert torch.equal(idx.cpu(), ridx)
    g = randn(rout.shape, F32, device)
    rout.backward(to_ref(g))
    gi = _like(rx, device, F32)
    KERNELS["adaptive_max_pool2d_backward"](g, x, idx, gi)
    assert_close(gi, rx.grad, F32)


def test_max_pool3d_forward(device):
    x = randn((1, 2, 4, 5, 4), F32, device)
    out, idx = KERNELS["max_pool3d_with_indices"](x, [2, 2, 2], [2, 1, 2], [0, 1, 0], [1, 1, 1])
    rout, ridx = aten.max_pool3d_with_indices(to_ref(x), [2, 2, 2], [2, 1, 2], [0, 1, 0])
    assert_close(out, rout, F32)
    assert torch.equal(idx.cpu(), ridx)


def test_empty_batch(device):
    x = randn((0, 3, 7, 6), F32, device)
    assert KERNELS["_adaptive_avg_pool2d"](x, [3, 4]).shape == (0, 3, 3, 4)
    out, idx = torch.empty(0, 3, 3, 3, device=device), torch.empty(0, 3, 3, 3, dtype=torch.int64)
    KERNELS["max_pool2d_with_indices"](
        x, [2, 2], [2, 2], [0, 0], [1, 1], False, out, idx.to(device)
    )
