"""Kernel-level test (on CPU tensors under Triton's interpreter by default;
tests/ops/conftest.py) of instance norm's running-statistics update (ops/instance_norm.py)."""

import pytest
import torch

from torch_ext.ops import group_norm as gn
from torch_ext.ops import instance_norm as inorm

from helpers import randn, to_ref


@pytest.mark.parametrize("n,c", [(3, 5), (40, 130)])  # several batch steps, channel blocks
@pytest.mark.parametrize("stat_dtype", [torch.float32, torch.float64])
def test_running_update_matches_the_composites_stats(n, c, stat_dtype, device):
    """From group norm's (mean, rstd) with a group per channel, the running stats end as
    PyTorch's composite leaves them: (1 - m) * old + m * the batch's mean of each sample's
    mean (and unbiased variance, var * S / (S - 1))."""
    S, eps, m = 6, 1e-5, 0.3
    x = randn((n, c, S), stat_dtype, device) * 3 + 1
    if n * c <= 64:  # group norm's own statistics
        _, mean, rstd = gn.native_group_norm(x, None, None, n, c, S, c, eps)
    else:  # the same numbers without 5,200 interpreted group-norm programs (CI time)
        mean, rstd = x.mean(2), (x.var(2, unbiased=False) + eps).rsqrt()
    rm = randn((c,), stat_dtype, device)
    rv = randn((c,), stat_dtype, device).abs() + 0.5
    xr = to_ref(x).double()
    want_m = (1 - m) * to_ref(rm).double() + m * xr.mean(2).mean(0)
    want_v = (1 - m) * to_ref(rv).double() + m * xr.var(2, unbiased=True).mean(0)
    inorm.instance_norm_running_update(mean, rstd, rm, rv, m, eps, S)
    # (momentum and eps reach the kernel as float32 scalars, as Triton passes a float)
    tol = 1e-5 if stat_dtype == torch.float32 else 1e-7
    torch.testing.assert_close(to_ref(rm).double(), want_m, rtol=tol, atol=tol)
    torch.testing.assert_close(to_ref(rv).double(), want_v, rtol=tol, atol=tol)
