"""Fused attention on the GPU at the kernel benchmark's shapes (bench/transformer_cases.py:
GPT-2's and Llama's heads, 512 to 2048 tokens; batch 1-2 so that the CPU reference stays
quick), bf16, through F.scaled_dot_product_attention and PyTorch's fused-attention op:
forward and gradients against float32 attention on the CPU, with and without a causal
mask, grouped heads, a head dim the tiles pad (80) and lengths no tile divides; dropout
exact against the kernel's own mask with its keep rate, reproducible under
torch.manual_seed; the backward's two ways of computing dQ (its own kernel under
deterministic algorithms, added atomically by the dK/dV kernel otherwise, where the cuda
driver picks that: dropout at head 64, and at head 128 from 2048 queries) agreeing."""

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from bench import transformer_cases
from conftest import DEV
from torch_ext.ops._launch import launch
from torch_ext.ops.attention_common import _dropout_keep

# (B, H, Hkv, L, D): the benchmark's attention cases up to 2048 tokens (batch 1, 2 at 512
# tokens: the CPU reference stays quick; each kernel sees the same tiles per head), and two
# it lacks: Llama's grouped heads, a padded head dim with lengths no tile divides
BENCH = [
    (2 if L <= 512 else 1, heads, heads, L, d)
    for heads, d, L, _ in transformer_cases.ATTENTION
    if L <= 2048
]
SHAPES = BENCH + [(2, 16, 4, 512, 64), (1, 8, 8, 1000, 80)]
DROPOUT_SHAPES = BENCH + [(2, 16, 4, 512, 64)]
TILE = 64


def _inputs(B, H, HK, L, D, seed):
    g = torch.Generator().manual_seed(seed)
    # (B, L, H, D) storage seen as (B, H, L, D), as models lay q out
    q = torch.randn(B, L, H, D, generator=g).transpose(1, 2).to(torch.bfloat16)
    k = torch.randn(B, HK, L, D, generator=g).to(torch.bfloat16)
    v = torch.randn(B, HK, L, D, generator=g).to(torch.bfloat16)
    grad = torch.randn(B, H, L, D, generator=g).to(torch.bfloat16)
    return q, k, v, grad


def _reference(q, k, v, grad, causal, keep=None, p=0.0):
    """float32 attention on the CPU (keys and values repeated per group; `keep`: the
    dropout mask), its output and gradients."""
    ref = [t.float().requires_grad_() for t in (q, k, v)]
    group = q.shape[1] // k.shape[1]
    kk, vv = (t.repeat_interleave(group, 1) for t in ref[1:])
    s = ref[0] @ kk.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        L = q.shape[2]
        s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    prob = torch.softmax(s, -1)
    if keep is not None:
        prob = prob * keep / (1 - p)
    out = prob @ vv
    out.backward(grad.float())
    return out.detach(), [t.grad for t in ref]


def _close(got, want, what, tol=2e-2):
    """bf16 results: the largest error within `tol` of the reference's largest value."""
    err = (got.float().cpu() - want).abs().max().item()
    scale = want.abs().max().item()
    assert err <= tol * scale, f"{what}: max error {err:.3g} against max {scale:.3g}"


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sdpa_at_benchmark_shapes(shape, causal):
    B, H, HK, L, D = shape
    q, k, v, grad = _inputs(*shape, seed=L + D)
    want, want_grads = _reference(q, k, v, grad, causal)
    dev = [t.to(DEV).requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*dev, is_causal=causal, enable_gqa=HK != H)
    out.backward(grad.to(DEV))
    _close(out.detach(), want, "out")
    for name, t, w in zip("qkv", dev, want_grads):
        _close(t.grad, w, f"d{name}")


@triton.jit
def _mask_kernel(out, seed, offset, Lq, Lk, p, BM: tl.constexpr, BN: tl.constexpr):
    # the kernels' dropout mask as 0/1, one (batch*head, query tile, key tile) a program
    bh = tl.program_id(0).to(tl.int64)
    m0 = tl.program_id(1) * BM
    c0 = tl.program_id(2) * BN
    rm = m0 + tl.arange(0, BM)
    cols = c0 + tl.arange(0, BN)
    keep = _dropout_keep(seed, offset, bh, m0, c0, Lq, Lk, p, BM, BN)
    ok = (rm < Lq)[:, None] & (cols < Lk)[None, :]
    ptrs = out + bh * Lq * Lk + rm[:, None] * Lk + cols[None, :]
    tl.store(ptrs, keep.to(tl.int8), mask=ok)


def _mask(seed, offset, shape, p):
    B, H, Lq, Lk = shape
    out = torch.empty(shape, dtype=torch.int8, device=DEV)
    grid = (B * H, triton.cdiv(Lq, TILE), triton.cdiv(Lk, TILE))
    launch(_mask_kernel, grid, out, seed, offset, Lq, Lk, p, BM=TILE, BN=TILE)
    return out.cpu().bool()


@pytest.mark.parametrize("shape", DROPOUT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_dropout_at_benchmark_shapes(shape):
    """The fused op with dropout 0.1 (what HF models train with): the output and the
    gradients of both dQ ways equal attention with the kernel's own mask; the mask keeps
    1 - p of the probabilities; the same seed draws the same mask."""
    B, H, HK, L, D = shape
    p = transformer_cases.DROPOUT
    q, k, v, grad = _inputs(*shape, seed=7 * L + D)
    torch.manual_seed(11)
    dev = [t.to(DEV).requires_grad_() for t in (q, k, v)]
    res = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
        *dev, None, p, True, False
    )
    out, seed, offset = res[0], int(res[6].item()), int(res[7].item())
    keep = _mask(seed, offset, (B, H, L, L), p)
    kept = keep.float().mean().item()  # within six standard deviations of 1 - p
    assert abs(kept - (1 - p)) < 6 * (p * (1 - p) / keep.numel()) ** 0.5 + 2**-17, kept
    want, want_grads = _reference(q, k, v, grad, True, keep, p)
    _close(out.detach(), want, "out")
    grads = {}
    for deterministic in (False, True):  # dQ atomic where the driver says so; its own kernel
        for t in dev:
            t.grad = None
        torch.use_deterministic_algorithms(deterministic)
        try:
            out.backward(grad.to(DEV), retain_graph=True)
        finally:
            torch.use_deterministic_algorithms(False)
        grads[deterministic] = [t.grad.clone() for t in dev]
        for name, t, w in zip("qkv", grads[deterministic], want_grads):
            _close(t, w, f"d{name} (deterministic={deterministic})")
    for name, a, b in zip("qkv", grads[False], grads[True]):  # the two ways agree
        _close(a, b.float().cpu(), f"d{name}: atomic against separate dQ", tol=1e-2)
    torch.manual_seed(11)
    again = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
        *[t.detach() for t in dev], None, p, True, False
    )
    assert torch.equal(again[0], out.detach())
