"""Fused attention forward/backward against PyTorch's math SDPA (float64)."""

import pytest
import torch
import torch.nn.functional as F

from torch_ext.ops import attention

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close

CASES = [(False, None), (False, "bool"), (False, "float"), (True, None)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal,mask_kind", CASES)
def test_flash_attention(causal, mask_kind, dtype, device):
    # (B, L, H, D) storage viewed as (B, H, L, D): strided like real models.
    q = randn((2, 37, 3, 16), dtype, device).transpose(1, 2)
    k = randn((2, 45, 3, 16), dtype, device).transpose(1, 2)
    v = randn((2, 3, 45, 8), dtype, device)
    mask = None
    if mask_kind == "bool":
        m = torch.rand(37, 45) > 0.2
        m[:, 0] = True
        mask = m.to(device)
    elif mask_kind == "float":
        mask = randn((1, 3, 37, 45), dtype, device)
    qr, kr, vr = [to_ref(t).requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(qr, kr, vr, attn_mask=to_ref(mask), is_causal=causal)
    out, lse = attention.flash_attention_fwd(q, k, v, mask, causal)
    assert_close(out, ref.detach().to(dtype), dtype, reduce_dim=4)
    g = randn(ref.shape, dtype, device)
    ref.backward(to_ref(g))
    dq, dk, dv = attention.flash_attention_bwd(g, q, k, v, out, lse, mask, causal)
    for got, want in ((dq, qr.grad), (dk, kr.grad), (dv, vr.grad)):
        assert_close(got, want.to(dtype), dtype, reduce_dim=16)


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_gqa(causal, grouped, device, monkeypatch):
    """Both ways of the backward's grouped heads: a dK/dV program per key head looping
    over its 3 query heads (grouped), and per-query-head programs summed after."""
    from torch_ext.ops import _launch

    real_spec = attention.spec
    least = 0 if grouped else 1 << 30  # programs the grouped way needs (spec)
    monkeypatch.setattr(
        attention,
        "spec",
        lambda name, *a: least if name == "attention_grouped_min_programs" else real_spec(name, *a),
    )
    q = randn((2, 6, 20, 16), torch.float32, device)
    k = randn((2, 2, 24, 16), torch.float32, device)
    v = randn((2, 2, 24, 16), torch.float32, device)
    qr, kr, vr = [to_ref(t).requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(
        qr, kr.repeat_interleave(3, 1), vr.repeat_interleave(3, 1), is_causal=causal
    )
    out, lse = attention.flash_attention_fwd(q, k, v, None, causal)
    assert_close(out, ref.detach().float(), reduce_dim=4)
    g = randn(ref.shape, torch.float32, device)
    ref.backward(to_ref(g))
    before = _launch.launches()
    dq, dk, dv = attention.flash_attention_bwd(g, q, k, v, out, lse, None, causal)
    # delta, dK/dV, dQ; and the two group sums when not grouped
    assert _launch.launches() - before == (3 if grouped else 5)
    for got, want in ((dq, qr.grad), (dk, kr.grad), (dv, vr.grad)):
        assert_close(got, want.float(), reduce_dim=16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("d", [80, 96, 128, 256])
def test_flash_attention_head_dims(d, dtype, device):
    """Head dims of real models (Phi 80, 96; Llama 128; Gemma 256), forward and
    backward: on a GPU their tiles and pipeline stages must fit its shared memory
    (backends/cuda/spec.py attention_tiles)."""
    q = randn((1, 2, 19, d), dtype, device)
    k = randn((1, 2, 23, d), dtype, device)
    v = randn((1, 2, 23, d), dtype, device)
    qr, kr, vr = [to_ref(t).requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(qr, kr, vr, is_causal=True)
    out, lse = attention.flash_attention_fwd(q, k, v, None, True)
    assert_close(out, ref.detach().to(dtype), dtype, reduce_dim=d)
    g = randn(ref.shape, dtype, device)
    ref.backward(to_ref(g))
    dq, dk, dv = attention.flash_attention_bwd(g, q, k, v, out, lse, None, True)
    for got, want in ((dq, qr.grad), (dk, kr.grad), (dv, vr.grad)):
        assert_close(got, want.to(dtype), dtype, reduce_dim=d)
