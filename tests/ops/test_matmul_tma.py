"""Kernel-level tests of ops/matmul_tma.py, the matrix products' persistent TMA kernel
(on CPU tensors under Triton's interpreter by default; tests/ops/conftest.py): the
tuner's TMA candidates forced, each orientation, batches, broadcast, bias, both
epilogues, and which operands a descriptor takes."""

import pytest

import torch

from helpers import force_spec, randn, spy_launches, stored, to_ref, tuner_picks
from helpers import assert_kernel_close as assert_close


def _pick_tma(monkeypatch, tile=0, seen=None):
    """The tuner picks the TMA kernel's `tile`-th configuration (ops/matmul_tma.py), on a
    driver with TMA and 4 multiprocessors; `seen` collects each call's candidates."""
    from torch_ext.ops import matmul, matmul_tma

    force_spec(monkeypatch, matmul_tma, mm_tma=True, multiprocessors=4)
    tuner_picks(monkeypatch, matmul, matmul_tma.TMA, tile, seen)
    launched = spy_launches(monkeypatch, matmul_tma)
    return matmul, launched


@pytest.mark.parametrize("a_t,b_t", [(False, False), (False, True), (True, False), (True, True)])
def test_tma_kernel_reads_each_orientation(a_t, b_t, device, monkeypatch):
    """The persistent TMA kernel (the tuner's candidate on Hopper) in the three
    orientations training needs and the fourth: operands read in place through
    descriptors (row- or column-major), a K that ends mid-tile (328 = 5 tiles of 64 and
    8), rows and columns that end mid-tile, more tiles than programs."""
    matmul, launched = _pick_tma(monkeypatch)
    dtype = torch.bfloat16
    M, K, N = 272, 328, 264
    a, b = stored((M, K), a_t, dtype, device), stored((K, N), b_t, dtype, device)
    out = torch.empty(M, N, dtype=dtype, device=device)
    matmul.mm_out(a, b, out)
    assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=K)
    assert [(k.fn.__name__, kw["A_T"], kw["B_T"], kw["C_TMA"]) for k, kw in launched] == [
        ("_mm_tma_kernel", a_t, b_t, True)
    ]
    # an output a descriptor cannot take (columns contiguous): the pointer epilogue
    out_t = torch.empty(N, M, dtype=dtype, device=device).t()
    matmul.mm_out(a, b, out_t)
    assert_close(out_t, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=K)
    assert launched[-1][1]["C_TMA"] is False


@pytest.mark.parametrize("tile", [1, 2])
def test_tma_kernel_batches_bias_and_broadcast(tile, device, monkeypatch):
    """bmm with B broadcast over the batch (stride 0: one descriptor batch), baddbmm's
    bias and scaling through the shared epilogue, fp16, the other tile shapes."""
    matmul, launched = _pick_tma(monkeypatch, tile)
    dtype = torch.float16
    a = randn((3, 256, 320), dtype, device)
    b = randn((320, 264), dtype, device).expand(3, 320, 264)
    bias = randn((264,), dtype, device)
    out = torch.empty(3, 256, 264, dtype=dtype, device=device)
    matmul.baddbmm_out(bias.expand(3, 256, 264), a, b, 0.5, 2.0, out)
    ref = 0.5 * to_ref(bias) + 2.0 * to_ref(a) @ to_ref(b)
    assert_close(out, ref.to(dtype), dtype, reduce_dim=320)
    assert [(k.fn.__name__, kw["BLOCK_N"], kw["C_TMA"]) for k, kw in launched] == [
        ("_mm_tma_kernel", 128, False)  # the bias: the pointer epilogue
    ]
    matmul.bmm_out(a, b, out)  # no bias: the batched output through a descriptor
    assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=320)
    assert launched[-1][1]["C_TMA"] is True


def test_tma_kernel_only_for_operands_a_descriptor_takes(device, monkeypatch):
    """Rows of 50,257 bf16 values (GPT-2's vocabulary) are not 16-byte multiples: no TMA
    candidate, the pointer kernel's result; aligned operands do get them."""
    seen = []
    matmul, launched = _pick_tma(monkeypatch, seen=seen)
    dtype = torch.bfloat16
    a = randn((256, 260), dtype, device)[:, :257]  # row stride 260: 520 bytes
    b = randn((257, 256), dtype, device)
    out = torch.empty(256, 256, dtype=dtype, device=device)
    matmul.mm_out(a, b, out)
    assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=257)
    a = randn((256, 264), dtype, device)
    matmul.mm_out(a, randn((264, 256), dtype, device), out)
    assert [any(c[-1] == "tma" for c in cands) for cands in seen] == [False, True]
    assert len(launched) == 1
