"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the softmax
family."""

import pytest

import torch

from torch_ext.ops import softmax

from helpers import FLOAT_DTYPES, randn, to_ref
from helpers import assert_kernel_close as assert_close


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "shape,dim", [((7, 300), 1), ((4, 33, 5), 1), ((9, 6), 0), ((11,), 0), ((0, 5), 1)]
)
def test_softmax(shape, dim, dtype, device):
    x = randn(shape, dtype, device) * 3
    xr = to_ref(x)
    for log in (False, True):
        out = torch.empty_like(x)
        (softmax.log_softmax_out if log else softmax.softmax_out)(x, dim, False, out)
        ref = (torch.log_softmax if log else torch.softmax)(xr, dim)
        assert_close(out, ref.to(dtype), dtype)
    g = randn(shape, dtype, device)
    y = torch.softmax(xr, dim)
    gi = torch.empty_like(x)
    softmax.softmax_backward_out(g, y.to(dtype).to(device), dim, dtype, gi)
    assert_close(
        gi, torch._softmax_backward_data(to_ref(g), y, dim, torch.float64).to(dtype), dtype
    )
    ly = torch.log_softmax(xr, dim)
    softmax.log_softmax_backward_out(g, ly.to(dtype).to(device), dim, dtype, gi)
    assert_close(
        gi,
        torch._log_softmax_backward_data(to_ref(g), ly, dim, torch.float64).to(dtype),
        dtype,
        reduce_dim=4,
    )


def test_softmax_half_to_float_noncontiguous(device):
    x = randn((40, 12), torch.float16, device).t()
    out = torch.empty(x.shape, dtype=torch.float32, device=device)
    softmax.softmax_out(x, 1, True, out)
    assert_close(out, torch.softmax(to_ref(x), 1).float())
