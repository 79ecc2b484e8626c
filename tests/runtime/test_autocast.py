"""torch.autocast("privateuseone") with CUDA's op lists."""

import pytest
import torch

import torch_ext

from helpers import DEV


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mm_runs_in_lower_precision(dtype):
    a = torch.randn(4, 8).to(DEV)
    b = torch.randn(8, 3).to(DEV)
    with torch_ext.fallback_mode("silent"), torch.autocast(DEV, dtype=dtype):
        assert torch.is_autocast_enabled(DEV)
        c = a @ b
        lin = torch.nn.functional.linear(a, b.t())
    assert c.dtype == dtype and lin.dtype == dtype
    torch.testing.assert_close(c.float().cpu(), a.cpu() @ b.cpu(), atol=0.1, rtol=0.05)


def test_fp32_ops_stay_fp32():
    x = torch.randn(4, 8).half().to(DEV)
    with torch_ext.fallback_mode("silent"), torch.autocast(DEV, dtype=torch.float16):
        y = torch.softmax(x, dim=-1)
    assert y.dtype == torch.float32


def test_outside_autocast_dtype_unchanged():
    a = torch.randn(2, 2).to(DEV)
    with torch_ext.fallback_mode("silent"):
        assert (a @ a).dtype == torch.float32
