"""Fused attention forward/backward against PyTorch's math SDPA (float64)."""

import pytest
import torch
import torch.nn.functional as F

from torch_ext.ops import attention

from helpers import force_spec, randn, spy_launches, to_ref
from helpers import assert_kernel_close as assert_close

CASES = [(False, None), (False, "bool"), (False, "float"), (True, None)]


def attn_mask(kind, heads, dtype, device):
    """None, a boolean (37, 45) mask with a key kept per row, or an additive
    (1, heads, 37, 45) one."""
    if kind == "bool":
        m = torch.rand(37, 45) > 0.2
        m[:, 0] = True
        return m.to(device)
    if kind == "float":
        return randn((1, heads, 37, 45), dtype, device)
    return None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal,mask_kind", CASES)
def test_flash_attention(causal, mask_kind, dtype, device):
    # (B, L, H, D) storage viewed as (B, H, L, D): strided like real models.
    q = randn((2, 37, 3, 16), dtype, device).transpose(1, 2)
    k = randn((2, 45, 3, 16), dtype, device).transpose(1, 2)
    v = randn((2, 3, 45, 8), dtype, device)
    mask = attn_mask(mask_kind, 3, dtype, device)
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


ATOMIC_CASES = [
    (torch.float32, False, None, 1, 16),
    (torch.bfloat16, True, None, 1, 16),
    (torch.float16, False, "bool", 1, 80),
    (torch.float32, True, "float", 3, 16),  # grouped heads
    (torch.bfloat16, False, None, 3, 32),
]


def _grouped_case(dtype, causal, mask_kind, group, d, device):
    """q (strided, as models lay it out), k, v with 2 key heads of `group` query heads
    each, a mask, an output gradient g, our forward's (out, lse), and float64 reference
    inputs whose .grad hold PyTorch's math SDPA gradients for g."""
    hk = 2
    q = randn((2, 37, hk * group, d), dtype, device).transpose(1, 2)
    k = randn((2, hk, 45, d), dtype, device)
    v = randn((2, hk, 45, d), dtype, device)
    mask = attn_mask(mask_kind, hk * group, dtype, device)
    refs = [to_ref(t).requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(
        refs[0],
        refs[1].repeat_interleave(group, 1),
        refs[2].repeat_interleave(group, 1),
        attn_mask=to_ref(mask),
        is_causal=causal,
    )
    out, lse = attention.flash_attention_fwd(q, k, v, mask, causal)
    g = randn(ref.shape, dtype, device)
    ref.backward(to_ref(g))
    return q, k, v, mask, g, out, lse, refs


@pytest.mark.parametrize("dtype,causal,mask_kind,group,d", ATOMIC_CASES)
@pytest.mark.parametrize("grouped", [True, False])
def test_dq_accumulated_atomically(
    dtype, causal, mask_kind, group, d, grouped, device, monkeypatch
):
    """The dK/dV kernel adding each query tile's dQ share atomically (the driver's choice
    outside deterministic mode): the same gradients, one kernel fewer; deterministic
    algorithms keep the separate dQ kernel."""
    from torch_ext.ops import _launch

    force_spec(
        monkeypatch,
        attention,
        attention_dq_atomic=True,
        attention_grouped_min_programs=0 if grouped else 1 << 30,
    )
    q, k, v, mask, g, out, lse, (qr, kr, vr) = _grouped_case(
        dtype, causal, mask_kind, group, d, device
    )
    for deterministic in (False, True):
        torch.use_deterministic_algorithms(deterministic)
        try:
            before = _launch.launches()
            dq, dk, dv = attention.flash_attention_bwd(g, q, k, v, out, lse, mask, causal)
            launched = _launch.launches() - before
        finally:
            torch.use_deterministic_algorithms(False)
        # delta, dK/dV (+ dQ shares), and the float32 buffer's copy unless float32;
        # deterministic: delta, dK/dV, dQ; not grouped: the two group sums after
        atomic_copy = 0 if dtype == torch.float32 else 1
        want = 3 if deterministic else 2 + atomic_copy
        want += 2 if group > 1 and not grouped else 0
        assert launched == want, (deterministic, launched)
        assert dq.stride() == q.stride()
        for got, ref_grad in ((dq, qr.grad), (dk, kr.grad), (dv, vr.grad)):
            assert_close(got, ref_grad.to(dtype), dtype, reduce_dim=16)


@pytest.mark.parametrize("p", [0.0, 0.25])
def test_dq_atomic_is_the_drivers_choice_per_head_and_dropout(p, device, monkeypatch):
    """The backward asks the driver whether to add dQ atomically with the padded head,
    the element size, whether dropout is on and the queries (the cuda driver's answer
    differs on each), and follows the answer: one launch fewer when it does; the dK/dV kernel's
    tiles are asked with that answer (the cuda driver's differ), and the orientation of
    its scores with the head, element size and dropout."""
    from torch_ext.ops import _launch

    asked, tiles, natural = [], [], []
    real = attention.spec

    def spec(name, *a):
        if name == "attention_dq_atomic":
            asked.append(a)
            return a[2]  # atomic with dropout only
        if name == "attention_kernel_tiles" and a[0] == "dkdv":
            tiles.append(a)
        if name == "attention_kv_natural":
            natural.append(a)
            return a[2]  # the scores as queries x keys with dropout
        return real(name, *a)

    monkeypatch.setattr(attention, "spec", spec)
    dtype, d = torch.float32, 24
    q, k, v = (randn((2, 3, 33, d), dtype, device) for _ in range(3))
    g = randn((2, 3, 33, d), dtype, device)
    draw = [torch.empty((), dtype=torch.int64, device=q.device) for _ in range(2)]
    out, lse = attention.flash_attention_fwd(
        q, k, v, None, True, None, (p, 5, 0) if p else None, None, draw
    )
    before = _launch.launches()
    attention.flash_attention_bwd(
        g, q, k, v, out, lse, None, True, None, (p, draw[0], draw[1]) if p else None
    )
    assert asked == [(32, 4, p > 0, 33)]
    assert tiles == [("dkdv", 32, 4, p > 0, 33, False)]  # (..., queries, keeps_mask)
    assert natural == [(32, 4, p > 0)]
    assert _launch.launches() - before == (2 if p else 3)  # delta, dK/dV [, dQ]


KERNEL_TILES = {  # kind -> (BLOCK_M, BLOCK_N, warps, stages): unlike each other and the shared
    "fwd": (32, 16, 2, 1),
    "dkdv": (16, 32, 4, 2),
    "dq": (32, 16, 2, 1),
}


@pytest.mark.parametrize("causal,mask_kind,group", [(True, None, 1), (False, "float", 3)])
def test_per_kernel_tiles(causal, mask_kind, group, device, monkeypatch):
    """A driver's own tiles, warps and stages per kernel (spec attention_kernel_tiles, which
    tests_gpu/harness/attention_tiles.py sweeps): forward, dK/dV and dQ each with tiles
    unlike the others' and the shared ones, at lengths no tile divides; the same output and
    gradients, and each kernel launched with its own."""
    force_spec(monkeypatch, attention, attention_kernel_tiles=None)  # reference: shared tiles
    seen = []
    real = attention.launch

    def spy(kernel, grid, *args, **kw):
        seen.append((kw.get("FOR_DQ"), kw.get("BLOCK_M"), kw.get("BLOCK_N"), kw.get("num_warps")))
        return real(kernel, grid, *args, **kw)

    dtype, hk, d = torch.float32, 2, 16
    q = randn((2, 37, hk * group, d), dtype, device).transpose(1, 2)
    k = randn((2, hk, 45, d), dtype, device)
    v = randn((2, hk, 45, d), dtype, device)
    mask = attn_mask(mask_kind, hk * group, dtype, device)
    g = randn((2, hk * group, 37, d), dtype, device)
    want_out, want_lse = attention.flash_attention_fwd(q, k, v, mask, causal)
    want = attention.flash_attention_bwd(g, q, k, v, want_out, want_lse, mask, causal)
    real_spec = attention.spec
    monkeypatch.setattr(
        attention,
        "spec",
        lambda name, *a: KERNEL_TILES[a[0]]
        if name == "attention_kernel_tiles"
        else real_spec(name, *a),
    )
    monkeypatch.setattr(attention, "launch", spy)
    out, lse = attention.flash_attention_fwd(q, k, v, mask, causal)
    got = attention.flash_attention_bwd(g, q, k, v, out, lse, mask, causal)
    # the reference ran on the device too: compared on the CPU (a GPU run caught this)
    assert_close(out, want_out.cpu(), dtype, reduce_dim=16)
    assert_close(lse, want_lse.cpu(), dtype, reduce_dim=16)
    for a, b in zip(got, want):
        assert_close(a, b.cpu(), dtype, reduce_dim=16)
    tiles = {(fd, m, n, w) for fd, m, n, w in seen if m is not None and n is not None}
    assert (None, 32, 16, 2) in tiles  # forward
    assert (False, 16, 32, 4) in tiles  # dK/dV
    assert (True, 32, 16, 2) in tiles  # dQ


@pytest.mark.parametrize("lq,lk", [(64, 48), (40, 80)])
@pytest.mark.parametrize("tiles", [(16, 16), (16, 32), (32, 16)])
@pytest.mark.parametrize("causal", [False, True])
def test_unmasked_interior_tiles(causal, tiles, lq, lk, device, monkeypatch):
    """Each kernel takes the tiles wholly inside both lengths and below the causal
    diagonal without a mask and the rest with it: many tiles of both kinds, both
    orders of the lengths (top-left causal alignment), tiles of unequal sides."""
    m, n = tiles
    force_spec(monkeypatch, attention, attention_kernel_tiles=None)
    real_spec = attention.spec
    monkeypatch.setattr(
        attention,
        "spec",
        lambda name, *a: (m, n, None, None)
        if name == "attention_kernel_tiles"
        else real_spec(name, *a),
    )
    q = randn((1, 2, lq, 16), torch.float32, device)
    k = randn((1, 2, lk, 16), torch.float32, device)
    v = randn((1, 2, lk, 16), torch.float32, device)
    qr, kr, vr = [to_ref(t).requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
    out, lse = attention.flash_attention_fwd(q, k, v, None, causal)
    assert_close(out, ref.detach().float(), reduce_dim=16)
    g = randn(ref.shape, torch.float32, device)
    ref.backward(to_ref(g))
    dq, dk, dv = attention.flash_attention_bwd(g, q, k, v, out, lse, None, causal)
    for got, want in ((dq, qr.grad), (dk, kr.grad), (dv, vr.grad)):
        assert_close(got, want.float(), reduce_dim=16)


@pytest.mark.parametrize("p", [0.0, 0.3])
@pytest.mark.parametrize("lq,lk", [(70, 70), (40, 90), (90, 40)])
def test_causal_query_tiles_heaviest_first(lq, lk, p, device, monkeypatch):
    """The forward and dQ kernels may launch their query tiles last first (the tiles
    that see the most keys; spec `attention_heavy_first`): they get HEAVY_FIRST under a
    causal mask only, and the output, log-sum-exp and gradients are those of the grid's
    own order bit for bit (each tile's work is the same, in another program), dropout
    included (its draw is per query and key, not per program); both match float64
    attention."""
    answers = {"attention_kernel_tiles": (16, 16, None, None)}
    monkeypatch.setattr(attention, "spec", lambda name, *a: answers.get(name))
    q, k, v = (randn((2, 3, n, 16), torch.float32, device) for n in (lq, lk, lk))
    g = randn((2, 3, lq, 16), torch.float32, device)
    runs = {}
    for heavy in (False, True):
        answers["attention_heavy_first"] = heavy
        calls = spy_launches(monkeypatch, attention)
        draw = [torch.zeros((), dtype=torch.int64, device=device) for _ in range(2)]
        fd, bd = ((p, 7, 0), (p, *draw)) if p else (None, None)
        out, lse = attention.flash_attention_fwd(q, k, v, None, True, None, fd, None, draw)
        runs[heavy] = (out, lse, *attention.flash_attention_bwd(g, q, k, v, out, lse, None,
                                                                True, None, bd))  # fmt: skip
        # the forward and dQ launches take the choice; the dK/dV launch never reverses
        flags = [kw["HEAVY_FIRST"] for _, kw in calls if "HEAVY_FIRST" in kw]
        assert sorted(flags) == sorted([heavy, heavy, False]), flags
    for a, b in zip(runs[True], runs[False]):
        assert torch.equal(a.cpu(), b.cpu())
    if not p:
        qr, kr, vr = [to_ref(t).requires_grad_() for t in (q, k, v)]
        ref = F.scaled_dot_product_attention(qr, kr, vr, is_causal=True)
        ref.backward(to_ref(g))
        for got, want in zip(runs[True][:1] + runs[True][2:], (ref, qr.grad, kr.grad, vr.grad)):
            assert_close(got, want.detach().float(), reduce_dim=16)
    calls = spy_launches(monkeypatch, attention)
    attention.flash_attention_fwd(q, k, v, None, False)
    assert {kw["HEAVY_FIRST"] for _, kw in calls if "HEAVY_FIRST" in kw} == {False}


@pytest.mark.parametrize(
    "dtype,causal,mask_kind,group,d,grouped",
    [
        (torch.bfloat16, True, None, 1, 16, False),
        (torch.float16, False, "bool", 3, 80, True),  # head padded to 128, grouped heads
        (torch.bfloat16, False, "float", 3, 32, False),  # per-query-head dK/dV, summed
    ],
)
def test_operands_through_descriptors(
    dtype, causal, mask_kind, group, d, grouped, device, monkeypatch
):
    """The driver's tensor-descriptor loads (spec attention_tma; DESC): q, k, v and dO
    fetched as whole tiles, zero past the lengths (37 queries, 45 keys: no tile divides
    them) and the head; the same output and gradients as the pointer loads, and each
    kernel launched with DESC where every operand qualifies, without where one does not
    (a row of 20 bf16 elements is 40 bytes, not a 16-byte multiple)."""
    force_spec(monkeypatch, attention, attention_grouped_min_programs=0 if grouped else 1 << 30)
    hk = 2
    q = randn((2, 37, hk * group, d), dtype, device).transpose(1, 2)
    k = randn((2, hk, 45, d), dtype, device)
    v = randn((2, hk, 45, d), dtype, device)
    mask = attn_mask(mask_kind, hk * group, dtype, device)
    g = randn((2, hk * group, 37, d), dtype, device)
    runs = {}
    for desc in (False, True):
        force_spec(monkeypatch, attention, attention_tma=desc)
        calls = spy_launches(monkeypatch, attention)
        out, lse = attention.flash_attention_fwd(q, k, v, mask, causal)
        runs[desc] = (out, lse, *attention.flash_attention_bwd(g, q, k, v, out, lse, mask, causal))
        flags = {kw["DESC"] for _, kw in calls if "DESC" in kw}
        assert flags == {desc}, flags
    for a, b in zip(runs[True], runs[False]):
        assert_close(a, b.cpu(), dtype, reduce_dim=16)
    odd = randn((2, hk, 45, 20), dtype, device)
    calls = spy_launches(monkeypatch, attention)
    attention.flash_attention_fwd(randn((2, hk, 37, 20), dtype, device), odd, odd, None, causal)
    assert {kw["DESC"] for _, kw in calls if "DESC" in kw} == {False}


@pytest.mark.parametrize("dtype,causal,mask_kind,group,d", ATOMIC_CASES)
@pytest.mark.parametrize("atomic", [False, True])
def test_dkdv_scores_either_way_round(
    dtype, causal, mask_kind, group, d, atomic, device, monkeypatch
):
    """The dK/dV kernel's scores as keys x queries (the default) or as queries x keys
    (`attention_kv_natural`, the cuda driver's choice with dropout at head 64): the same
    gradients as float64 attention either way, with dQ separate or atomic, masks and
    grouped heads."""
    force_spec(monkeypatch, attention, attention_kv_natural=True, attention_dq_atomic=atomic)
    q, k, v, mask, g, out, lse, (qr, kr, vr) = _grouped_case(
        dtype, causal, mask_kind, group, d, device
    )
    dq, dk, dv = attention.flash_attention_bwd(g, q, k, v, out, lse, mask, causal)
    for got, want in ((dq, qr.grad), (dk, kr.grad), (dv, vr.grad)):
        assert_close(got, want.to(dtype), dtype, reduce_dim=16)


def test_cuda_driver_turns_the_scores_round_with_dropout_at_head_64():
    """The cuda driver's rule for the dK/dV kernel's orientation (measured on an H200,
    backends/cuda/spec.py): queries x keys with dropout at rows of at most 128 bytes."""
    from torch_ext.backends.cuda import spec as cuda_spec

    assert cuda_spec.attention_kv_natural(64, 2, True)
    assert cuda_spec.attention_kv_natural(32, 4, True)
    assert not cuda_spec.attention_kv_natural(64, 2, False)
    assert not cuda_spec.attention_kv_natural(128, 2, True)


def test_cuda_driver_adds_dq_atomically_with_dropout_or_long_head_64_sequences():
    """The cuda driver's rule for the atomic dQ (measured on an H200,
    backends/cuda/spec.py): with dropout at head 64, or at head 128 from 2048 queries;
    without dropout only at head 64 from 4096 queries."""
    from torch_ext.backends.cuda import spec as cuda_spec

    assert cuda_spec.attention_dq_atomic(64, 2, True, 512)
    assert cuda_spec.attention_dq_atomic(128, 2, True, 2048)
    assert not cuda_spec.attention_dq_atomic(128, 2, True, 512)
    assert cuda_spec.attention_dq_atomic(64, 2, False, 4096)
    assert not cuda_spec.attention_dq_atomic(64, 2, False, 2048)
    assert not cuda_spec.attention_dq_atomic(128, 2, False, 8192)


def test_cuda_driver_gives_the_head_128_forward_wide_tiles_past_512_queries():
    """The cuda driver's head-128 forward tiles (measured on an H200,
    backends/cuda/spec.py): 128 x 64 with 8 warps from 513 queries on or where the
    forward keeps its dropout mask, the shared tiles otherwise; its dK/dV and dQ tiles
    whatever the length."""
    from torch_ext.backends.cuda import spec as cuda_spec

    assert cuda_spec.attention_kernel_tiles("fwd", 128, 2, False, 512) is None
    assert cuda_spec.attention_kernel_tiles("fwd", 128, 2, False, 512, True) == (128, 64, 8, 3)
    assert cuda_spec.attention_kernel_tiles("fwd", 128, 2, False, 513) == (128, 64, 8, 3)
    for queries in (512, 8192):
        assert cuda_spec.attention_kernel_tiles("dq", 128, 2, False, queries) == (64, 32, 4, 3)
        assert cuda_spec.attention_kernel_tiles("dkdv", 128, 2, False, queries) == (32, 64, 4, 3)
    assert cuda_spec.attention_kernel_tiles("fwd", 64, 2, False, 8192) is None


def test_cuda_driver_takes_the_dq_kernels_query_tiles_heaviest_first():
    """The cuda driver's rule for the causal tile order (measured on an H200,
    backends/cuda/spec.py): the dQ kernel's heaviest tiles first, the forward's in the
    grid's order."""
    from torch_ext.backends.cuda import spec as cuda_spec

    assert cuda_spec.attention_heavy_first("dq")
    assert not cuda_spec.attention_heavy_first("fwd")


def test_cuda_driver_keeps_the_dropout_mask_where_the_dkdv_tile_is_transposed():
    """The cuda driver keeps the forward's dropout mask for the backward at rows of more
    than 128 bytes (measured on an H200, backends/cuda/spec.py): where the dK/dV kernel
    computes keys x queries and draws each Philox counter twice."""
    from torch_ext.backends.cuda import spec as cuda_spec

    for head, size in ((128, 2), (64, 4), (256, 2)):
        assert cuda_spec.attention_keep_dropout_mask(head, size)
        assert not cuda_spec.attention_kv_natural(head, size, True)
    for head, size in ((64, 2), (32, 4)):
        assert not cuda_spec.attention_keep_dropout_mask(head, size)
        assert cuda_spec.attention_kv_natural(head, size, True)


@pytest.mark.parametrize(
    "mode,driver,lk,d,kept",
    [
        ("auto", True, 4096, 128, True),  # 1 KiB a query row <= 4 x 128 x 2 bytes
        ("auto", True, 4160, 128, False),  # 1040 bytes a row: more than q, k, v and out
        ("auto", False, 1024, 128, False),  # the driver draws again
        ("keep", False, 65536, 64, True),  # always, memory or not
        ("keep", True, 31, 64, False),  # under 32 keys: no tile of 32
        ("regenerate", True, 1024, 128, False),
    ],
)
def test_keeps_the_dropout_mask_by_the_rule(mode, driver, lk, d, kept, monkeypatch):
    """ops/attention.py keeps_dropout_mask: TORCH_EXT_ATTENTION_DROPOUT_MASK, the driver's
    choice (forced here) and the memory the mask takes (bf16)."""
    force_spec(monkeypatch, attention, attention_keep_dropout_mask=driver)
    monkeypatch.setenv("TORCH_EXT_ATTENTION_DROPOUT_MASK", mode)
    q = torch.empty(1, 1, 1, d, dtype=torch.bfloat16)
    assert attention.keeps_dropout_mask(q, 64, lk, d, d) == kept
