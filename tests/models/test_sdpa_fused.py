"""scaled_dot_product_attention takes our fused Triton kernel (PyTorch's
"overrideable" SDPA ops) where it can, and the math path where it cannot."""

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch.nn.attention import SDPBackend, sdpa_kernel

import torch_ext  # noqa: F401
from torch_ext.coverage import calls_during
from torch_ext.ops._launch import launch
from torch_ext.ops.attention_common import _dropout_keep

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


@pytest.mark.parametrize("grad_kind", ["heads_transposed", "expanded", "rows_strided"])
def test_backward_reads_the_gradient_in_place(grad_kind):
    """The gradient of the attention output in the layout a model gives it: through the
    transpose of its heads (B, L, H, D memory, as GPT-2's), expanded (stride 0), or with
    rows that are not contiguous (the one case copied). Gradients equal float64's, and
    the backward launches three kernels (delta, dK/dV, dQ) unless it must copy."""
    from torch_ext.ops import _launch

    q, k, v = qkv(lq=11)
    base, view = {
        "heads_transposed": ((2, 11, 4, 8), lambda t: t.transpose(1, 2)),
        "expanded": ((1, 1, 1, 8), lambda t: t.expand(2, 4, 11, 8)),
        "rows_strided": ((2, 4, 11, 16), lambda t: t[..., ::2]),
    }[grad_kind]
    base = torch.randn(base, generator=torch.Generator().manual_seed(1))
    go, god = view(base), view(base.to(DEV))  # the same layout on both sides
    assert god.stride() == go.stride() and not go.is_contiguous()
    ref = [t.double().requires_grad_() for t in (q, k, v)]
    F.scaled_dot_product_attention(*ref).backward(go.double())
    dev = [t.to(DEV).requires_grad_() for t in (q, k, v)]
    y = F.scaled_dot_product_attention(*dev)
    before = _launch.launches()
    y.backward(god)
    launched = _launch.launches() - before
    for a, b in zip(dev, ref):
        torch.testing.assert_close(a.grad.cpu(), b.grad.float(), atol=2e-5, rtol=1e-4)
    assert launched == (4 if grad_kind == "rows_strided" else 3), launched


def test_grouped_query_heads():
    q, k, v = qkv(hq=8, hk=2)
    y = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    yd = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), enable_gqa=True)
    torch.testing.assert_close(yd.cpu(), y, atol=2e-5, rtol=1e-4)


def test_disabled_backend_takes_the_math_path():
    q, k, v = [t.to(DEV) for t in qkv()]
    with sdpa_kernel(SDPBackend.MATH):
        calls = calls_during(lambda: F.scaled_dot_product_attention(q, k, v))
    assert FUSED not in calls, calls


@triton.jit
def _mask_kernel(out, seed, offset, Lq, Lk, p, BM: tl.constexpr, BN: tl.constexpr):
    # the kernels' dropout mask of one (batch*head) as 0/1, for the reference
    bh = tl.program_id(0).to(tl.int64)
    rm = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    keep = _dropout_keep(seed, offset, bh, 0, 0, Lq, Lk, p, BM, BN)
    ok = (rm < Lq)[:, None] & (cols < Lk)[None, :]
    tl.store(out + bh * Lq * Lk + rm[:, None] * Lk + cols[None, :], keep.to(tl.int8), mask=ok)


def _mask(seed, offset, shape, p):
    B, H, Lq, Lk = shape
    out = torch.empty(shape, dtype=torch.int8, device=DEV)
    bm, bn = triton.next_power_of_2(Lq), max(16, triton.next_power_of_2(Lk))
    launch(_mask_kernel, (B * H,), out, seed, offset, Lq, Lk, p, BM=bm, BN=bn)
    return out.cpu().bool()


@pytest.mark.parametrize("dq_atomic,natural", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("hk", [4, 2])
def test_dropout_is_fused_and_exact_against_its_mask(causal, hk, dq_atomic, natural, monkeypatch):
    # SDPA with dropout (HF models train with attention dropout) runs the fused kernel;
    # forward and gradients equal float64 attention with the kernel's own mask, with dQ
    # in its own kernel or accumulated atomically by the dK/dV kernel, whose scores are
    # keys x queries or (natural) queries x keys: the same mask either way round
    from helpers import force_spec
    from torch_ext.ops import attention

    from torch_ext import _C

    force_spec(monkeypatch, attention, attention_dq_atomic=dq_atomic, attention_kv_natural=natural)
    # the mask kept by the forward and read by the backward, or drawn again by it
    monkeypatch.setenv("TORCH_EXT_ATTENTION_DROPOUT_MASK", "keep" if hk == 2 else "regenerate")
    _C._plan_clear()  # plans recorded under the other setting would replay
    p = 0.3
    q, k, v = qkv(hq=4, hk=hk, lq=21, lk=45)
    torch.manual_seed(7)
    masks = []
    for _ in range(3):  # recorded, then replayed by launch plans with each call's draw
        dev = [t.to(DEV).requires_grad_() for t in (q, k, v)]
        res = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
            *dev, None, p, causal, False
        )
        out, seed, offset = res[0], int(res[6].item()), int(res[7].item())
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
        out.backward(g.to(DEV))
        keep = _mask(seed, offset, (2, 4, 21, 45), p)
        ref = [t.double().requires_grad_() for t in (q, k, v)]
        kk, vv = (t.repeat_interleave(4 // hk, 1) for t in ref[1:])
        s = ref[0] @ kk.transpose(-1, -2) / 4.0  # scale 1/sqrt(16)
        if causal:
            s = s.masked_fill(torch.ones(21, 45, dtype=torch.bool).triu(1), float("-inf"))
        expected = (torch.softmax(s, -1) * keep / (1 - p)) @ vv
        expected.backward(g.double())
        got = out.detach().cpu().double()
        torch.testing.assert_close(got, expected.detach(), atol=2e-5, rtol=1e-4)
        for a, b in zip(dev, ref):
            torch.testing.assert_close(a.grad.cpu().double(), b.grad, atol=5e-5, rtol=1e-4)
        kept = keep.float().mean().item()  # 30,000 Philox numbers
        assert abs(kept - (1 - p)) < 0.02, kept
        # each of a counter's eight 16-bit numbers: query row r // 8 % 2, key k // 8 % 2,
        # its half k % 2 (_dropout_keep)
        rows, keys = torch.arange(21) // 8 % 2, torch.arange(45)
        for number in range(8):
            sel = (rows[:, None] * 4 + (keys // 8 % 2 * 2 + keys % 2)[None, :]) == number
            kept = keep[..., sel].float().mean().item()
            assert abs(kept - (1 - p)) < 0.08, (number, kept)
        # numbers of one counter are independent draws: two keys of a pair, two rows 8
        # apart, agree as often as independent ones would (p^2 + (1 - p)^2 = 0.58)
        agree = p * p + (1 - p) ** 2
        for a, b in (
            (keep[..., 0:44:2], keep[..., 1:45:2]),
            (keep[..., 0:8, :], keep[..., 8:16, :]),
        ):
            assert abs((a == b).float().mean().item() - agree) < 0.05
        masks.append(keep)
    assert not torch.equal(masks[1], masks[2])  # a fresh draw each call


def test_dropout_through_sdpa_reproduces_under_manual_seed():
    q, k, v = [t.to(DEV) for t in qkv()]
    calls = calls_during(lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
    assert FUSED in calls and "aten::_softmax" not in calls, calls
    outs = []
    for seed in (1, 1, 2):
        torch.manual_seed(seed)
        outs.append(F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).cpu())
    assert torch.equal(outs[0], outs[1]) and not torch.equal(outs[0], outs[2])
    # p = 1 drops everything (as torch: zeros, not NaN)
    zero = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).cpu()
    assert torch.equal(zero, torch.zeros_like(zero))


def _dropout_run(mode, causal, monkeypatch, lk=45, corrupt=False):
    """Two SDPA calls with dropout under one seed (recorded, then replayed by a launch
    plan) under TORCH_EXT_ATTENTION_DROPOUT_MASK=`mode`: (out, dq, dk, dv, bytes of the
    offset tensor's storage) each; `corrupt` zeroes the kept bits between forward and
    backward (every score dropped)."""
    from helpers import force_spec
    from torch_ext import _C
    from torch_ext.ops import attention

    # the same kernels either way (a GPU's driver picks others where it draws the mask);
    # `auto` keeps it where the driver says so (forced: the host driver draws again)
    force_spec(monkeypatch, attention, attention_dq_atomic=False, attention_kv_natural=False,
               attention_keep_dropout_mask=True)  # fmt: skip
    monkeypatch.setenv("TORCH_EXT_ATTENTION_DROPOUT_MASK", mode)
    _C._plan_clear()  # plans recorded under the other mode would replay
    dev = [t.to(DEV).requires_grad_() for t in qkv(hq=4, hk=2, lq=21, lk=lk)]
    runs = []
    for _ in range(2):
        torch.manual_seed(5)
        for t in dev:
            t.grad = None
        res = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
            *dev, None, 0.3, causal, False
        )
        room = res[7].untyped_storage().nbytes()
        if corrupt:
            res[7].data.as_strided((room // 8,), (1,), 0)[2:].zero_()  # not versioned
        res[0].backward(torch.ones_like(res[0]))
        runs.append([res[0].detach().cpu()] + [t.grad.cpu() for t in dev] + [room])
    return runs


@pytest.mark.parametrize("causal", [False, True])
def test_dropout_mask_kept_as_bits_or_drawn_again_is_the_same(causal, monkeypatch):
    # the forward keeps its mask as bits where they fit (TORCH_EXT_ATTENTION_DROPOUT_MASK):
    # a word per query row and 32 keys behind the offset it wrote; the backward reads
    # them instead of drawing again: the same output and gradients, bit for bit
    drawn = _dropout_run("regenerate", causal, monkeypatch)
    # `auto` keeps it where the driver says so (forced) and it fits: 16 bytes a row
    kept = _dropout_run("auto" if causal else "keep", causal, monkeypatch)
    for a, b in zip(drawn, kept):
        assert all(torch.equal(x, y) for x, y in zip(a[:4], b[:4]))
        assert a[4] == 8 and b[4] == 16 + 2 * 4 * 21 * 16  # the offset; and the mask
    if not causal:
        short = _dropout_run("keep", causal, monkeypatch, lk=29)  # under 32 keys: drawn
        assert short[0][4] == 8


def test_backward_reads_the_kept_bits(monkeypatch):
    # zeroing the kept bits drops every score in the backward (the forward kept others):
    # dv vanishes (dP too; dq and dk keep the softmax's -P * delta share), so the
    # gradients come from the bits, not from a second draw
    kept = _dropout_run("keep", True, monkeypatch)
    for run, clean in zip(_dropout_run("keep", True, monkeypatch, corrupt=True), kept):
        out, dq, dk, dv, room = run
        assert room > 8 and torch.equal(out, clean[0]) and out.abs().sum() > 0
        assert torch.equal(dv, torch.zeros_like(dv)) and clean[3].abs().sum() > 0
        assert not torch.equal(dk, clean[2])
