"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the fused family
(fused ops, rotary embedding)."""

import pytest

import torch
import torch.nn.functional as F

from torch_ext.ops import fused

from helpers import FLOAT_DTYPES, randn, to_ref
from helpers import assert_kernel_close as assert_close


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fused(dtype, device):
    x = randn((6, 16), dtype, device)
    xr = to_ref(x)
    assert_close(fused.silu_and_mul(x), (F.silu(xr[:, :8]) * xr[:, 8:]).to(dtype), dtype)
    for approx in ("none", "tanh"):
        assert_close(
            fused.gelu_and_mul(x, approx),
            (F.gelu(xr[:, :8], approximate=approx) * xr[:, 8:]).to(dtype),
            dtype,
        )
        xg = xr.clone().requires_grad_()
        g = randn((6, 8), dtype, device)
        (F.gelu(xg[:, :8], approximate=approx) * xg[:, 8:]).backward(to_ref(g))
        assert_close(fused.gelu_and_mul_backward(g, x, approx), xg.grad.to(dtype), dtype)
    xg = xr.clone().requires_grad_()
    g = randn((6, 8), dtype, device)
    (F.silu(xg[:, :8]) * xg[:, 8:]).backward(to_ref(g))
    assert_close(fused.silu_and_mul_backward(g, x), xg.grad.to(dtype), dtype)
    res = randn((6, 16), dtype, device)
    w, b = randn((16,), dtype, device), randn((16,), dtype, device)
    y, _, _ = fused.skip_layer_norm(x, res, [16], w, b, 1e-5)
    s = (xr + to_ref(res)).to(dtype).double()
    assert_close(
        y, F.layer_norm(s, [16], to_ref(w), to_ref(b), 1e-5).to(dtype), dtype, reduce_dim=2
    )
    y, summed = fused.fused_add_rms_norm(x, res, [16], w, 1e-6)
    assert_close(summed, s.to(dtype), dtype)
    assert_close(y, F.rms_norm(s, [16], to_ref(w), 1e-6).to(dtype), dtype, reduce_dim=2)


@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary(interleaved, device):
    q = randn((2, 5, 3, 8), torch.float32, device)
    ang = torch.rand(5, 1, 4, dtype=torch.float64)
    cos, sin = torch.cos(ang).float().to(device), torch.sin(ang).float().to(device)
    qr, c, s = to_ref(q), to_ref(cos), to_ref(sin)
    if interleaved:
        x1, x2 = qr[..., 0::2], qr[..., 1::2]
        ref = torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], -1).flatten(-2)
    else:
        x1, x2 = qr[..., :4], qr[..., 4:]
        ref = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    out = fused.rotary_embedding(q, cos, sin, interleaved)
    assert_close(out, ref.float())
    back = fused.rotary_embedding_backward(out, cos, sin, interleaved)
    assert_close(back, q.cpu(), atol=1e-5)
