"""Kernel-level tests of the normalization family's batch norm (training with
running-stat updates, eval, with and without affine; forward and backward),
called through the registry on `device` (CPU tensors under Triton's
interpreter by default; tests/ops/conftest.py) against PyTorch's CPU
native_batch_norm in float64."""

import pytest
import torch

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

aten = torch.ops.aten
F32, BF16 = torch.float32, torch.bfloat16


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (6, 3)], ids=["nchw", "nc"])
def test_native_batch_norm_forward_backward(shape, affine, training, dtype, device):
    x = randn(shape, dtype, device, noncontig=len(shape) == 4)
    w = randn((3,), F32, device) if affine else None
    b = randn((3,), F32, device) if affine else None
    rm, rv = randn((3,), F32, device), randn((3,), F32, device, low=0.5, high=2.0)
    ref_rm, ref_rv = to_ref(rm), to_ref(rv)
    out, mean, invstd = KERNELS["native_batch_norm"](x, w, b, rm, rv, training, 0.1, 1e-5)
    rx = to_ref(x)
    r_out, r_mean, r_invstd = aten.native_batch_norm(
        rx, to_ref(w), to_ref(b), ref_rm, ref_rv, training, 0.1, 1e-5
    )
    n = x.numel() // 3
    assert_close(out, r_out, dtype, reduce_dim=4)
    assert_close(rm, ref_rm, F32, reduce_dim=n)  # running stats updated in place (training)
    assert_close(rv, ref_rv, F32, reduce_dim=n)
    if training:
        assert_close(mean, r_mean, F32, reduce_dim=n)
        assert_close(invstd, r_invstd, F32, reduce_dim=n)
    g = randn(shape, dtype, device)
    mask = [True, affine, affine]
    gi, gw, gb = KERNELS["native_batch_norm_backward"](
        g, x, w, rm, rv, mean, invstd, training, 1e-5, mask
    )
    r_gi, r_gw, r_gb = aten.native_batch_norm_backward(
        to_ref(g), rx, to_ref(w), ref_rm, ref_rv, r_mean, r_invstd, training, 1e-5, mask
    )
    assert_close(gi, r_gi, dtype, reduce_dim=n)
    if affine:
        assert_close(gw, r_gw, F32, reduce_dim=n)
        assert_close(gb, r_gb, F32, reduce_dim=n)
