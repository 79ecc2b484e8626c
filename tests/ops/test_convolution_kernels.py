"""Kernel-level tests of the convolution family (convolution_overrideable and
its backward: 1-d/2-d, stride, padding, dilation, groups, transposed), called
through the registry on `device` (CPU tensors under Triton's interpreter by
default; tests/ops/conftest.py) against PyTorch's CPU convolution and autograd."""

import pytest
import torch

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

CASES = [
    # input shape, weight shape, stride, padding, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3, 2), [1, 1], [0, 0], [1, 1], 1),
    ((1, 4, 8, 7), (6, 2, 3, 3), [2, 1], [1, 2], [1, 2], 2),
    ((2, 2, 9), (3, 2, 4), [2], [1], [1], 1),
]


def _conv(x, w, b, case, transposed=False, out_pad=None):
    _, _, stride, padding, dilation, groups = case
    out_pad = out_pad or [0] * len(stride)
    return KERNELS["convolution_overrideable"](
        x, w, b, stride, padding, dilation, transposed, out_pad, groups
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("case", CASES, ids=["plain", "strided-grouped", "1d"])
def test_convolution_forward_backward(dtype, case, device):
    xs, ws, stride, padding, dilation, groups = case
    x, w = randn(xs, dtype, device), randn(ws, dtype, device)
    b = randn((ws[0],), dtype, device)
    y = _conv(x, w, b, case)
    rx, rw, rb = (to_ref(t).requires_grad_() for t in (x, w, b))
    ry = torch.ops.aten.convolution(
        rx, rw, rb, stride, padding, dilation, False, [0] * len(stride), groups
    )
    red = ws[1] * ws[2] * (ws[3] if len(ws) > 3 else 1)
    assert_close(y, ry, dtype, reduce_dim=red)
    g = randn(y.shape, dtype, device)
    gx, gw, gb = KERNELS["convolution_backward_overrideable"](
        g, x, w, stride, padding, dilation, False, [0] * len(stride), groups, [True, True, True]
    )
    ry.backward(to_ref(g))
    assert_close(gx, rx.grad, dtype, reduce_dim=red)
    assert_close(gw, rw.grad, dtype, reduce_dim=y.numel() // y.shape[1])
    assert_close(gb, rb.grad, dtype, reduce_dim=y.numel() // y.shape[1])


def test_convolution_transposed_and_output_mask(device):
    x = randn((1, 4, 5, 5), torch.float32, device)
    w = randn((4, 3, 3, 3), torch.float32, device)  # (C_in, C_out, kh, kw)
    case = (None, None, [2, 2], [1, 1], [1, 1], 1)
    y = _conv(x, w, None, case, transposed=True, out_pad=[1, 0])
    ref = torch.nn.functional.conv_transpose2d(
        to_ref(x), to_ref(w), stride=2, padding=1, output_padding=(1, 0)
    )
    assert_close(y, ref, reduce_dim=36)
    g = randn(y.shape, torch.float32, device)
    gx, gw, gb = KERNELS["convolution_backward_overrideable"](
        g, x, w, [2, 2], [1, 1], [1, 1], True, [1, 0], 1, [True, False, False]
    )
    rx = to_ref(x).requires_grad_()
    torch.nn.functional.conv_transpose2d(
        rx, to_ref(w), stride=2, padding=1, output_padding=(1, 0)
    ).backward(to_ref(g))
    assert_close(gx, rx.grad, reduce_dim=36)
    assert gw is None and gb is None


def test_convolution_noncontiguous_and_empty_batch(device):
    x = randn((2, 5, 6, 3), torch.float32, device).permute(0, 3, 1, 2)  # channels last view
    w = randn((2, 3, 2, 2), torch.float32, device)
    case = (None, None, [1, 1], [0, 0], [1, 1], 1)
    y = _conv(x, w, None, case)
    assert_close(y, torch.nn.functional.conv2d(to_ref(x), to_ref(w)), reduce_dim=12)
    e = _conv(randn((0, 3, 4, 4), torch.float32, device), w, None, case)
    assert e.shape == (0, 2, 3, 3)
