"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the normalization
family (layer, group, rms norm)."""

import pytest

import torch
import torch.nn.functional as F

from torch_ext.ops import normalization as norm

from helpers import FLOAT_DTYPES, randn, to_ref
from helpers import assert_kernel_close as assert_close


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(dtype, affine, device):
    x = randn((6, 5, 72), dtype, device)
    w = randn((72,), dtype, device) if affine else None
    b = randn((72,), dtype, device) if affine else None
    y, mean, rstd = norm.native_layer_norm(x, [72], w, b, 1e-5)
    ry, rmean, rrstd = torch.native_layer_norm(to_ref(x), [72], to_ref(w), to_ref(b), 1e-5)
    assert_close(y, ry.to(dtype), dtype, reduce_dim=2)
    assert_close(mean, rmean.float(), torch.float32, reduce_dim=2)
    assert_close(rstd, rrstd.float(), torch.float32, rtol=1e-4)
    g = randn((6, 5, 72), dtype, device)
    mask = [True, affine, affine]
    got = norm.native_layer_norm_backward(
        g, x, [72], rmean.to(mean.dtype).to(device), rrstd.to(rstd.dtype).to(device), w, b, mask
    )
    ref = torch.ops.aten.native_layer_norm_backward(
        to_ref(g), to_ref(x), [72], rmean, rrstd, to_ref(w), to_ref(b), mask
    )
    for a, r, n in zip(got, ref, (72, 30, 30)):
        if r is None:
            assert a is None
        else:
            assert_close(a, r.to(dtype), dtype, reduce_dim=n)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_group_norm(dtype, device):
    N, C, H, W, G = 3, 6, 5, 7, 3
    x = randn((N, C, H, W), dtype, device)
    w = randn((C,), dtype, device)
    b = randn((C,), dtype, device)
    got = norm.native_group_norm(x, w, b, N, C, H * W, G, 1e-5)
    ref = torch.native_group_norm(to_ref(x), to_ref(w), to_ref(b), N, C, H * W, G, 1e-5)
    assert_close(got[0], ref[0].to(dtype), dtype, reduce_dim=2)
    assert_close(got[1], ref[1].float(), torch.float32, reduce_dim=2)
    g = randn((N, C, H, W), dtype, device)
    gb = norm.native_group_norm_backward(
        g,
        x,
        ref[1].to(got[1].dtype).to(device),
        ref[2].to(got[2].dtype).to(device),
        w,
        N,
        C,
        H * W,
        G,
        [True] * 3,
    )
    rb = torch.ops.aten.native_group_norm_backward(
        to_ref(g), to_ref(x), ref[1], ref[2], to_ref(w), N, C, H * W, G, [True] * 3
    )
    for a, r in zip(gb, rb):
        assert_close(a, r.to(dtype), dtype, reduce_dim=30)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rms_norm(dtype, device):
    x = randn((9, 64), dtype, device)
    w = randn((64,), dtype, device)
    xr = to_ref(x).requires_grad_()
    wr = to_ref(w).requires_grad_()
    ref = F.rms_norm(xr, [64], wr, 1e-6)
    y, rstd = norm.rms_norm_fwd(x, [64], w, 1e-6)
    assert_close(y, ref.detach().to(dtype), dtype, reduce_dim=2)
    g = randn((9, 64), dtype, device)
    dx, dw = torch.autograd.grad(ref, (xr, wr), to_ref(g))
    gx, gw = norm.rms_norm_bwd(g, x, [64], rstd, w, [True, True])
    assert_close(gx, dx.to(dtype), dtype, reduce_dim=4)
    assert_close(gw, dw.to(dtype), dtype, reduce_dim=9)
