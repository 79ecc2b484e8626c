"""Kernel-level tests of ops/matmul_sk.py, the matrix products' stream-K kernel (on CPU
tensors under Triton's interpreter by default; tests/ops/conftest.py): its candidates
forced through the tuner, on a driver of 4 (or 8) multiprocessors, so that tiles are
split between two to four programs, whole tiles run alone, and K ends mid-step."""

import pytest

import torch

from helpers import force_spec, randn, spy_launches, to_ref
from helpers import assert_kernel_close as assert_close


def _pick_sk(monkeypatch, sms=4, occupancy=1, block_n=128, seen=None):
    """The tuner picks the stream-K candidate with `block_n` and `occupancy` on a driver
    of `sms` multiprocessors; `seen` collects each call's candidates."""
    from torch_ext.ops import matmul, matmul_sk

    force_spec(monkeypatch, matmul_sk, multiprocessors=sms,
               mm_stream_k_occupancy=[occupancy])  # fmt: skip

    def choose(family, key, candidates, run, dev):
        if seen is not None:
            seen.append(list(candidates))
        sk = [c for c in candidates if len(c) > 5 and c[5] == matmul_sk.SK and c[1] == block_n]
        return sk[0] if sk else candidates[0]

    monkeypatch.setattr(matmul, "tuned", choose)
    return matmul, matmul_sk, spy_launches(monkeypatch, matmul_sk)


@pytest.mark.parametrize("a_t,b_t", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("sms,occupancy,K", [(4, 1, 328), (8, 2, 1032)])
def test_stream_k_each_orientation(a_t, b_t, sms, occupancy, K, device, monkeypatch):
    """384 x K x 256 in 128 x 128 tiles, the last step of K 8 wide: 6 tiles of 6 steps
    over 4 programs (9 steps each: whole tiles and tiles of two programs), or of 17 steps
    over 16 programs (6-7 each: tiles of three or four programs); each orientation read
    in place."""
    matmul, sk, launched = _pick_sk(monkeypatch, sms, occupancy)
    dtype = torch.bfloat16
    M, N = 384, 256
    a = randn((K, M), dtype, device).t() if a_t else randn((M, K), dtype, device)
    b = randn((N, K), dtype, device).t() if b_t else randn((K, N), dtype, device)
    out = torch.empty(M, N, dtype=dtype, device=device)
    matmul.mm_out(a, b, out)
    assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=K)
    assert len(launched) == 1
    kern, kw = launched[0]
    assert (kern.fn.__name__, kw["BLOCK_N"], kw["EVEN_K"]) == ("_mm_sk_kernel", 128, False)


def test_stream_k_bias_repeat_and_counters(device, monkeypatch):
    """addmm's bias and scaling through a split tile's merge; a second call gives the
    same bits (the partials summed in program order) and leaves the tiles' counters
    re-armed (zero)."""
    from torch_ext.ops._launch import arrival_counters

    matmul, sk, launched = _pick_sk(monkeypatch)
    dtype = torch.float16
    M, K, N = 256, 512, 384
    a, b = randn((M, K), dtype, device), randn((K, N), dtype, device)
    bias = randn((N,), dtype, device)
    out = torch.empty(M, N, dtype=dtype, device=device)
    matmul.addmm_out(bias, a, b, 0.5, 2.0, out)
    ref = 0.5 * to_ref(bias) + 2.0 * to_ref(a) @ to_ref(b)
    assert_close(out, ref.to(dtype), dtype, reduce_dim=K)
    first = out.clone()
    matmul.addmm_out(bias, a, b, 0.5, 2.0, out)
    assert torch.equal(out, first)
    assert [k.fn.__name__ for k, _ in launched] == ["_mm_sk_kernel"] * 2
    assert int(arrival_counters("split_k", out.device).abs().sum()) == 0


def test_stream_k_candidates(monkeypatch):
    """Timed for one matrix whose tiles leave the last wave of programs part empty, not
    for a batch, nor where the tiles fill their waves (132 multiprocessors)."""
    from torch_ext.ops import matmul_sk

    force_spec(monkeypatch, matmul_sk, multiprocessors=132, mm_stream_k_occupancy=[1])
    # ResNet-50's 1024 -> 512 1x1 convolution at 14x14, batch 32: 98 tiles of 128 x 256
    cands = matmul_sk.candidates(6272, 512, 1024, 1)
    assert (128, 256, 64, 8, 3, matmul_sk.SK, 1) in cands
    assert matmul_sk.candidates(6272, 512, 1024, 4) == []  # a batch
    # 4096^3: 512 tiles of 128 x 256 (3.9 waves), 1024 of 128 x 128 (7.8)
    assert matmul_sk.candidates(4096, 4096, 4096, 1) == []
