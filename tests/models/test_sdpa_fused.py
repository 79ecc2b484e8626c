"""scaled_dot_product_attention takes our fused Triton kernel (PyTorch's
"overrideable" SDPA ops) where it can, and the math path where it cannot."""

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import torch_ext  # noqa: F401
from torch_ext.coverage import calls_during

from helpers import DEV

FUSED = "aten::_scaled_dot_product_fused_attention_overrideable"


def qkv(hq=4, hk=4, lq=9, lk=11, d=16, dv=8, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return [
        torch.randn(2, h, l, dd, generator=g, dtype=dtype)
        for h, l, dd in ((hq, lq, d), (hk, lk, d), (hk, lk, dv))
    ]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_fused_forward_backward(causal, mask_kind):
    q, k, v = qkv()
    mask = {None: None, "bool": torch.rand(9, 11) > 0.3, "float": torch.randn(9, 11)}[mask_kind]
    causal = causal and mask is None
    ref = [t.double().requires_grad_() for t in (q, k, v)]
    dev = [t.to(DEV).requires_grad_() for t in (q, k, v)]
    m_ref = None if mask is None else (mask if mask.dtype == torch.bool else mask.double())
    F.scaled_dot_product_attention(*ref, attn_mask=m_ref, is_causal=causal).sum().backward()
    calls = calls_during(
        lambda: F.scaled_dot_product_attention(
            *dev, attn_mask=None if mask is None else mask.to(DEV), is_causal=causal
        )
        .sum()
        .backward()
    )
    assert calls.get(FUSED) == 1 and calls.get(FUSED + "_backward") == 1, calls
    assert "aten::_softmax" not in calls, calls
    for a, b in zip(dev, ref):
        torch.testing.assert_close(a.grad.cpu(), b.grad.float(), atol=2e-5, rtol=1e-4)


def test_grouped_query_heads():
    q, k, v = qkv(hq=8, hk=2)
    y = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    yd = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), enable_gqa=True)
    torch.testing.assert_close(yd.cpu(), y, atol=2e-5, rtol=1e-4)


def test_dropout_and_disabled_backend_take_the_math_path():
    q, k, v = [t.to(DEV) for t in qkv()]
    calls = calls_during(lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=0.3))
    assert FUSED not in calls and "aten::_softmax" in calls, calls
    with sdpa_kernel(SDPBackend.MATH):
        calls = calls_during(lambda: F.scaled_dot_product_attention(q, k, v))
    assert FUSED not in calls, calls
