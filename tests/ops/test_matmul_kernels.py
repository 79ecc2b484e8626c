"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the matmul
family."""

import pytest

import torch

from torch_ext.ops import matmul as blas
from torch_ext.ops import matmul_candidates as mmc
from torch_ext.ops.matmul_candidates import WIDE, tiles_of

from helpers import FLOAT_DTYPES, force_spec, randn, to_ref
from helpers import assert_kernel_close as assert_close


def force_blas_spec(monkeypatch, **values):
    """force_spec for the matrix products' module and their candidates' (both ask `spec`)."""
    for module in (blas, mmc):
        force_spec(monkeypatch, module, **values)


def run_twice(a, b, x, bias, k):
    """a @ b (+ x where `bias`) through mm_out / addmm_out twice: each time close to the
    reference, the second bit for bit the first. Returns the output."""
    dtype = a.dtype
    ref = to_ref(a) @ to_ref(b) + (to_ref(x) if bias else 0)
    first = None
    for _ in range(2):
        out = torch.empty(a.shape[0], b.shape[1], dtype=dtype, device=a.device)
        if bias:
            blas.addmm_out(x, a, b, 1.0, 1.0, out)
        else:
            blas.mm_out(a, b, out)
        assert_close(out, ref.to(dtype), dtype, reduce_dim=k)
        first = out.clone() if first is None else first
        assert torch.equal(to_ref(out), to_ref(first))
    return out


DTYPES = FLOAT_DTYPES + [torch.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (37, 29, 50), (64, 16, 128), (5, 0, 3), (4, 6, 0)])
def test_mm(M, N, K, dtype, device):
    a = randn((M, K), dtype, device)
    b = randn((K, N), dtype, device)
    out = torch.empty(M, N, dtype=dtype, device=device)
    blas.mm_out(a, b, out)
    assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=max(K, 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_mm_strided_and_addmm(dtype, device):
    a = randn((40, 30), dtype, device).t()  # (30, 40), column-major
    b = randn((40, 24), dtype, device)[:, ::2]  # (40, 12), strided
    bias = randn((12,), dtype, device)
    out = torch.empty(12, 30, dtype=dtype, device=device).t()
    blas.addmm_out(bias, a, b, 0.5, 2.0, out)
    ref = 0.5 * to_ref(bias) + 2.0 * to_ref(a) @ to_ref(b)
    assert_close(out, ref.to(dtype), dtype, reduce_dim=40)
    nan_bias = torch.full((30, 12), float("nan"), dtype=dtype).to(device)
    blas.addmm_out(nan_bias, a, b, 0, 1.0, out)  # beta == 0 ignores self
    assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=40)
    c = randn((30, 12), dtype, device)
    ref = 1.5 * to_ref(c) + to_ref(a) @ to_ref(b)
    blas.addmm_out(c, a, b, 1.5, 1.0, c)  # addmm_ in place
    assert_close(c, ref.to(dtype), dtype, reduce_dim=40)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_bmm_baddbmm_mv_dot(dtype, device):
    x = randn((3, 7, 20), dtype, device)
    y = randn((3, 20, 9), dtype, device)
    out = torch.empty(3, 7, 9, dtype=dtype, device=device)
    blas.bmm_out(x, y, out)
    assert_close(out, torch.bmm(to_ref(x), to_ref(y)).to(dtype), dtype, reduce_dim=20)
    bias = randn((7, 1), dtype, device)
    blas.baddbmm_out(bias, x, y, 0.5, -1.0, out)
    ref = torch.baddbmm(to_ref(bias), to_ref(x), to_ref(y), beta=0.5, alpha=-1.0)
    assert_close(out, ref.to(dtype), dtype, reduce_dim=20)
    m = randn((13, 20), dtype, device)
    v = randn((20,), dtype, device)
    assert_close(blas.mv(m, v), (to_ref(m) @ to_ref(v)).to(dtype), dtype, reduce_dim=20)
    assert_close(blas.dot(v, v), (to_ref(v) @ to_ref(v)).to(dtype), dtype, reduce_dim=20)


def test_int_mm_refused(device):
    a = torch.ones(2, 2, dtype=torch.int64).to(device)
    with pytest.raises(NotImplementedError):
        blas.mm(a, a)


@pytest.mark.parametrize("split", [2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_split_k(split, dtype, device, monkeypatch):
    """Split-K (the GPU's choice for few output tiles and a long K, forced here): each
    split's partial tile, summed by the last program to arrive in a fixed order. Uneven
    splits (an empty one included), a bias, transposed operands, the counters re-armed
    for the next call, and the same bits every time."""
    force_spec(monkeypatch, blas, mm_split_k=split)
    a = randn((300, 20), dtype, device).t()  # (20, 300): a weight gradient's layout
    b = randn((300, 36), dtype, device)
    bias = randn((36,), dtype, device)
    out = torch.empty(20, 36, dtype=dtype, device=device)
    ref = 0.5 * to_ref(bias) + 2.0 * to_ref(a) @ to_ref(b)
    first = None
    for _ in range(3):
        blas.addmm_out(bias, a, b, 0.5, 2.0, out)
        assert_close(out, ref.to(dtype), dtype, reduce_dim=300)
        first = out.clone() if first is None else first
        assert torch.equal(to_ref(out), to_ref(first))
    assert int(to_ref(blas.arrival_counters("split_k", out.device)).abs().sum()) == 0  # re-armed
    blas.mm_out(a, b, out)
    assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=300)


@pytest.mark.parametrize("pick", [-1, -2])
def test_split_k_candidates_are_timed_and_run(pick, device, monkeypatch):
    """The driver's split counts to time beside its rule (mm_split_k_candidates): the
    tuner's candidates carry them, and the one it picks launches that many splits of K
    (uneven at 3: K = 512 is 8 steps of 64) and gives the product."""
    from torch_ext.ops import matmul

    force_blas_spec(
        monkeypatch, mm_split_k=None, mm_split_k_candidates=[2, 3],
        mm_tail_split_candidates=None, multiprocessors=None,
    )  # fmt: skip
    from torch_ext.ops import matmul_tma

    force_spec(monkeypatch, matmul_tma, mm_tma=None)  # the pointer kernel's candidates only
    seen, grids = [], []

    def choose(family, key, candidates, run, dev):
        seen.extend(candidates)
        return list(candidates)[pick]

    real = matmul.launch

    def spy(kernel, grid, *args, **kw):
        grids.append(grid)
        return real(kernel, grid, *args, **kw)

    monkeypatch.setattr(matmul, "tuned", choose)
    monkeypatch.setattr(matmul, "launch", spy)
    dtype = torch.bfloat16
    a = randn((512, 256), dtype, device).t()  # (256, 512): a weight gradient's layout
    b = randn((512, 256), dtype, device)
    out = torch.empty(256, 256, dtype=dtype, device=device)
    matmul.mm_out(a, b, out)
    assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=512)
    assert {len(c) for c in seen} == {5, 6} and {c[5] for c in seen if len(c) == 6} == {2, 3}
    picked = list(seen)[pick]
    assert grids[-1][0] == tiles_of(256, 256, picked)[2] * picked[5]  # every tile split


@pytest.mark.parametrize("k", [320, 300])  # whole BLOCK_K steps, or a masked last one
@pytest.mark.parametrize("bias", [False, True])
def test_tail_split_splits_only_the_last_wave(bias, k, device, monkeypatch):
    """A tail-split candidate (mm_tail_split_candidates: split, programs a multiprocessor):
    the tiles of the full waves run whole and only those of the part-filled last wave are
    split in K; the product (with a bias), the same bits every time, counters re-armed."""
    from torch_ext.ops import matmul

    force_blas_spec(
        monkeypatch, mm_split_k=None, mm_split_k_candidates=None,
        mm_tail_split_candidates=[(2, 1)], multiprocessors=4, mm_config=(128, 128, 64, 8, 3),
    )  # fmt: skip
    grids = []
    monkeypatch.setattr(
        matmul, "tuned",
        lambda f, k, cands, run, dev: [c for c in cands if len(c) == 7 and c[-1] != WIDE][0],
    )  # fmt: skip
    real = matmul.launch

    def spy(kernel, grid, *args, **kw):
        grids.append((grid, kw["SPLIT"]))
        return real(kernel, grid, *args, **kw)

    monkeypatch.setattr(matmul, "launch", spy)
    dtype = torch.bfloat16
    a = randn((384, k), dtype, device)
    b = randn((k, 256), dtype, device)
    out = run_twice(a, b, randn((256,), dtype, device), bias, k)
    # 128 x 128 tiles: 3 x 2 = 6; waves of 4: 4 whole, the last 2 in 2 splits each
    assert grids[-1] == ((4 + 2 * 2, 1), 2)
    assert int(to_ref(matmul.arrival_counters("split_k", out.device)).abs().sum()) == 0


def test_tuning_buckets_split_octaves_into_quarters():
    """A tuning decision holds for a bucket of sizes: powers of two up to 512, quarter
    octaves above (GPT-2's 2304 and 3072 rows, 18 and 24 tiles of 128, no longer share
    one); every size falls in the bucket named by its top."""
    from torch_ext.ops.matmul_candidates import size_bucket

    assert [size_bucket(n) for n in (1, 3, 256, 300, 512)] == [1, 4, 256, 512, 512]
    assert size_bucket(2304) != size_bucket(3072) and size_bucket(768) != size_bucket(1024)
    tops = sorted({size_bucket(n) for n in range(1, 9000)})
    for n in range(1, 9000):
        b = size_bucket(n)
        assert b >= n and (b == tops[0] or tops[tops.index(b) - 1] < n)


def test_float32_follows_the_matmul_precision(monkeypatch):
    """float32 products multiply in float32 under "highest" (PyTorch's default) and in TF32
    under "high", as CUDA's do; the flag is part of the launch plans' keys, so a plan
    recorded under one setting is not replayed under the other."""
    from torch_ext.ops import matmul

    seen = []
    real = matmul.launch

    def spy(kernel, grid, *args, **kw):
        seen.append(kw.get("PRECISION"))
        return real(kernel, grid, *args, **kw)

    monkeypatch.setattr(matmul, "launch", spy)
    a = torch.randn(40, 24, device="privateuseone")
    b = torch.randn(24, 56, device="privateuseone")
    old = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        for _ in range(2):  # recorded, then replayed (no Python)
            torch.mm(a, b)
        assert seen == ["ieee"], seen
        torch.set_float32_matmul_precision("high")
        out = torch.mm(a, b)
        assert seen == ["ieee", "tf32"], seen
    finally:
        torch.set_float32_matmul_precision(old)
    torch.testing.assert_close(out.cpu(), a.cpu() @ b.cpu(), atol=1e-2, rtol=1e-2)
    assert matmul.matmul_precision(torch.bfloat16) is None
    assert matmul.matmul_precision(torch.float64) == "ieee"


@pytest.mark.parametrize("pick", range(9))
def test_every_matmul_candidate_computes_the_product(monkeypatch, pick):
    """Whichever tile configuration the timing picks for a large bf16 product, mm, addmm
    and bmm equal the CPU's; an in-place addmm_ is never timed (a timing launch would add
    its product twice)."""
    from torch_ext.ops import matmul

    chosen = []

    def choose(family, key, candidates, run, device):
        assert family == "mm" and len(candidates) >= 8  # the table's may repeat one
        chosen.append(key)
        return list(candidates)[min(pick, len(candidates) - 1)]

    monkeypatch.setattr(matmul, "tuned", choose)
    g = torch.Generator().manual_seed(pick)
    m = 300 + pick  # a size of its own: no launch plan of another test replays here
    a = torch.randn(m, 260, generator=g).bfloat16()
    b = torch.randn(260, 270, generator=g).bfloat16()
    bias = torch.randn(270, generator=g).bfloat16()
    dev = [t.to("privateuseone") for t in (a, b, bias)]
    ref = a.double() @ b.double()
    got = torch.mm(dev[0], dev[1]).cpu().double()
    assert (got - ref).abs().max() <= 0.02 * ref.abs().max()
    got = torch.addmm(dev[2], dev[0], dev[1]).cpu().double()
    assert (got - (ref + bias.double())).abs().max() <= 0.02 * ref.abs().max()
    got = torch.bmm(dev[0][None].expand(2, -1, -1), dev[1][None].expand(2, -1, -1))
    assert (got.cpu().double() - ref).abs().max() <= 0.02 * ref.abs().max()
    assert len(chosen) == 3
    c = torch.randn(m, 270, generator=g).bfloat16()
    cd = c.to("privateuseone")
    cd.addmm_(dev[0], dev[1])
    assert len(chosen) == 3  # not timed
    assert (cd.cpu().double() - (ref + c.double())).abs().max() <= 0.02 * ref.abs().max()


def test_short_steps_are_timed_for_wide_products():
    """A product of at least 256 each way (a channels_last 1x1 convolution's over its
    pixels) also times 32-wide steps of K, 128 x 128 and 128 x 256."""
    first = (128, 256, 64, 8, 3)
    cands = mmc.mm_candidates(first, 25088, 256, 512, torch.bfloat16)
    assert cands[0] == first and len(cands) == len(set(cands))
    assert all(c in cands for c in mmc.SHORT_STEPS)
    assert mmc.SHORT_STEPS[0][2] == 32 and mmc.SHORT_STEPS[1][2] == 32


def test_skinny_candidates_cut_to_the_matrix():
    """A side under 256 with much work (a 1x1 convolution's product over its pixels)
    times SKINNY's tiles cut to the matrix, no duplicate; little work keeps the table's."""
    first = (64, 64, 32, 4, 3)
    cands = mmc.mm_candidates(first, 100352, 64, 64, torch.bfloat16)
    assert cands[0] == first and len(cands) == len(set(cands)) > 4
    assert all(c[1] <= 64 and c[2] <= 64 for c in cands[1:])
    assert (256, 64, 64, 8, 3) in cands
    assert (128, 64, 32, 4, 4) in cands  # SHORT_STEPS' 128 x 128 cut to the 64 columns
    per_image = mmc.mm_candidates(first, 64, 3136, 64, torch.bfloat16, batch=32)
    assert all(c[0] == 64 for c in per_image[1:]) and (64, 256, 64, 8, 3) in per_image
    assert mmc.mm_candidates(first, 64, 3136, 64, torch.bfloat16) == [first]  # one image
    assert mmc.mm_candidates(first, 100352, 8, 64, torch.bfloat16) == [first]
    assert mmc.mm_candidates(first, 100352, 64, 64, torch.float32) == [first]


@pytest.mark.parametrize("pick", range(8))
def test_every_skinny_candidate_computes_the_product(monkeypatch, device, pick):
    """Whichever of the skinny tiles the timing picks (K and N under one tile of the
    uncut configuration, odd M), the product equals the reference."""
    seen = []

    def choose(family, key, candidates, run, dev):
        seen.append(list(candidates))
        return list(candidates)[min(pick, len(candidates) - 1)]

    monkeypatch.setattr(blas, "tuned", choose)
    monkeypatch.setattr(mmc, "SKINNY_WORK", 0)  # small matrices here
    a = randn((300, 48), torch.bfloat16, device)
    b = randn((48, 40), torch.bfloat16, device)
    out = torch.empty(300, 40, dtype=torch.bfloat16, device=device)
    blas.mm_out(a, b, out)
    assert seen and len(seen[0]) > 3
    assert_close(out, (to_ref(a) @ to_ref(b)).to(torch.bfloat16), torch.bfloat16, reduce_dim=48)


def test_wide_tiles_are_timed_where_waves_part_fill(monkeypatch):
    """Tiles 192 wide (WIDE) are among the candidates where they fill at most two waves of
    programs (GPT-2's 768-wide products at 4096 tokens: 128 tiles for 132
    multiprocessors), K split as well where they fill under half a wave; not for wider
    products, nor without the GPU's multiprocessor count."""
    force_blas_spec(monkeypatch, multiprocessors=132, mm_split_k_candidates=None)
    first = (128, 128, 64, 8, 3)
    wide = [c for c in mmc.mm_candidates(first, 4096, 768, 768, torch.bfloat16) if c[-1] == WIDE]
    assert wide and all(c[-2] == 64 and len(c) == 7 for c in wide)
    assert tiles_of(4096, 768, wide[0], 64)[2] == 128
    assert not [c for c in mmc.mm_candidates(first, 4096, 3072, 768, torch.bfloat16)
                if c[-1] == WIDE]  # fmt: skip
    force_blas_spec(monkeypatch, multiprocessors=132, mm_split_k_candidates=[4])
    cands = mmc.mm_candidates(first, 768, 768, 4096, torch.bfloat16)
    assert (*mmc.WIDE_TILES[0][:5], 4, 64, WIDE) in cands  # 24 tiles: K split 4 ways
    batched = mmc.mm_candidates(first, 768, 768, 4096, torch.bfloat16, batch=2)
    assert not [c for c in batched if c[-1] == WIDE and len(c) == 8]
    force_blas_spec(monkeypatch, multiprocessors=None)
    assert not [c for c in mmc.mm_candidates(first, 4096, 768, 768, torch.bfloat16)
                if c[-1] == WIDE]  # fmt: skip


@pytest.mark.parametrize("k", [320, 300])  # whole BLOCK_K steps, or a masked last one
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("tile,split", [(0, False), (0, True), (3, False)])  # 128 or 64 rows
def test_wide_tiles_compute_the_product(tile, split, bias, k, device, monkeypatch):
    """A wide tile (two products on one A block) at a width that leaves the last tile's
    second block past the edge (448 = 2 x 192 + 64), with K split (WIDE_SPLIT) or not:
    the product (with a bias), the same bits every time, counters re-armed."""
    force_blas_spec(monkeypatch, multiprocessors=132, mm_split_k_candidates=[2],
                    mm_tail_split_candidates=None, mm_config=(128, 128, 64, 8, 3))  # fmt: skip
    size = 8 if split else 7
    want = mmc.WIDE_TILES[tile]
    picked = []

    def choose(family, key, cands, run, dev):
        picked.append([c for c in cands if c[-1] == WIDE and len(c) == size and
                       c[:2] == want[:2] and c[-2] == want[5]][0])  # fmt: skip
        return picked[-1]

    monkeypatch.setattr(blas, "tuned", choose)
    grids = []
    real = blas.launch

    def spy(kernel, grid, *args, **kw):
        grids.append((grid, kw["SPLIT"], kw["BLOCK_N2"]))
        return real(kernel, grid, *args, **kw)

    monkeypatch.setattr(blas, "launch", spy)
    dtype = torch.bfloat16
    a = randn((256, k), dtype, device)
    b = randn((448, k), dtype, device).t()  # x @ W.t(): a linear layer's forward
    out = run_twice(a, b, randn((448,), dtype, device), bias, k)
    tiles = tiles_of(256, 448, picked[-1], want[5])[2]  # 2 x 3 of 128 x 192, 4 x 3 of 64 x 192
    assert tiles == (6 if tile == 0 else 12)
    assert grids[-1] == ((tiles * (2 if split else 1), 1), 2 if split else 1, want[5])
    assert int(to_ref(blas.arrival_counters("split_k", out.device)).abs().sum()) == 0


def test_wide_split_tiles_replay_from_cpp(monkeypatch):
    """A product the tuner runs on wide tiles with K split (scratch and arrival counters
    included) is recorded as a launch plan on its first call and replayed from C++
    after (no Python launch), right on new data each time, the counters re-armed."""
    import torch_ext

    force_blas_spec(monkeypatch, multiprocessors=132, mm_split_k_candidates=[2],
                    mm_tail_split_candidates=None)  # fmt: skip
    monkeypatch.setattr(blas, "tuned", lambda f, key, cands, run, dev: [
        c for c in cands if c[-1] == WIDE and len(c) == 8][0])  # fmt: skip
    launches = []
    real = blas.launch

    def spy(kernel, grid, *args, **kw):
        launches.append(kw["BLOCK_N2"])
        return real(kernel, grid, *args, **kw)

    monkeypatch.setattr(blas, "launch", spy)
    plans = torch_ext._C
    before = dict(plans._plan_stats())
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        a = torch.randn(264, 320, generator=g).bfloat16()  # rows of their own: a new plan
        b = torch.randn(320, 448, generator=g).bfloat16()
        bias = torch.randn(448, generator=g).bfloat16()
        got = torch.addmm(*(t.to("privateuseone") for t in (bias, a, b))).cpu().double()
        ref = a.double() @ b.double() + bias.double()
        assert (got - ref).abs().max() <= 0.02 * ref.abs().max()
    now = dict(plans._plan_stats())
    assert launches == [64]  # one Python launch: the recording call's
    assert now["recorded"] - before["recorded"] >= 1
    assert now["replayed"] - before["replayed"] >= 2
    counters = blas.arrival_counters("split_k", torch.device("privateuseone"))
    assert int(counters.cpu().abs().sum()) == 0
