"""The matrix products' tile configurations: the candidates the tuner times for the
pointer kernel of ops/matmul.py (tile shapes, 32-wide steps of K, split K, tiles 192
wide, skinny tiles) and the size buckets its choices are kept under."""

import torch

from ._launch import cdiv, next_pow2, pow2_at_most
from ..backends import spec


def tiles_of(M, N, cfg, bn2=0):
    """(BLOCK_M, BLOCK_N, output tiles) of an M x N product under configuration `cfg`:
    its tile sides, no longer than the matrix's (powers of two, at least 16); `bn2`
    more columns a tile where a WIDE candidate gives them."""
    bm = max(16, pow2_at_most(M, cfg[0]))
    bn = max(16, pow2_at_most(N, cfg[1]))
    return bm, bn, cdiv(M, bm) * cdiv(N, bn + bn2)


def size_bucket(n):
    """The tuning bucket of a size: its power of two up to 512, then quarters of an
    octave ((p/2, 5p/8], ..., (7p/8, p] for p = next_pow2(n)), each named by its top.
    Tile counts, which the best tiles and split of K follow, differ across an octave:
    GPT-2's 2304 and 3072 rows (18 and 24 tiles of 128) shared one bucket and its pick.
    Comparisons only, so that a size-generic launch plan guards the bucket (_symbolic)."""
    p = next_pow2(n)
    if p <= 512:
        return p
    for top in (5 * p // 8, 3 * p // 4, 7 * p // 8):
        if n <= top:
            return top
    return p


def mm_candidates(first, M, N, K, dtype, batch=1):
    """Tile configurations (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages[, split of K]) to
    time for an fp16/bf16 product of at least 256 in each dimension: the table's
    (`first`), then tile shapes that sweeps found best on some transformer shape or that
    fit other tile counts, and 32-wide steps of K (SHORT_STEPS), then, for one matrix
    whose tiles leave a wave of programs part empty, the first four with K split (the
    driver's `mm_split_k_candidates`: every tile; `mm_tail_split_candidates`: the tiles
    of a part-filled last wave only, (split, programs a multiprocessor) appended), then
    tiles 192 wide where they fill at most two waves (_wide_candidates); a side under
    256: _skinny_candidates; one otherwise."""
    if dtype not in (torch.float16, torch.bfloat16):
        return [first]
    if min(M, N, K) < 256:
        return _skinny_candidates(first, M, N, K, batch)
    extra = [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 3),
             (128, 128, 64, 4, 4), (64, 128, 64, 4, 4), (128, 256, 64, 8, 4),
             (64, 256, 64, 4, 4), (128, 64, 64, 4, 4), *SHORT_STEPS]  # fmt: skip
    cands = list(dict.fromkeys([tuple(first), *extra]))
    if batch == 1:
        for cfg in list(cands[:4]):
            tiles = tiles_of(M, N, cfg)[2]
            cands += [(*cfg, s) for s in spec("mm_split_k_candidates", tiles, K) or ()]
            cands += [(*cfg, *t) for t in spec("mm_tail_split_candidates", tiles, K) or ()]
    return cands + _wide_candidates(M, N, K, batch)


WIDE = "wide"  # a candidate's last element: tiles BLOCK_N + its next-to-last wide
# Tiles BLOCK_N + BLOCK_N2 wide (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, BLOCK_N2), a
# width that is no power of two, for products whose 128 x 128 or 128 x 256 tiles leave
# a last wave part empty: GPT-2's 768-wide products at 4096 tokens are 128 tiles of
# 128 x 192 (one wave of 132 multiprocessors) against 192 of 128 x 128. On an H200
# (session 47, tests_gpu/harness/mm_wide.py) they won 6 of GPT-2's and Llama's 15
# products, input gradients most (768 -> 768: 80% -> 94% of cuBLAS). Not kept: the
# same tiles in the TMA kernel (two B and C descriptors) and 64 x 96 tiles (cuBLAS's at
# 768 x 768 x 4096), never the fastest there. The first also with K split.
WIDE_TILES = [(128, 128, 64, 8, 3, 64), (128, 128, 64, 8, 4, 64), (128, 128, 32, 8, 4, 64),
              (64, 128, 64, 4, 3, 64)]  # fmt: skip
WIDE_SPLIT = (0,)


def _wide_fits(M, N, sms):
    """Whether 128 x 192 tiles of an M x N product fill at most two waves of programs on
    `sms` multiprocessors (None: unknown, the interpreter's driver: no)."""
    return bool(sms) and cdiv(M, 128) * cdiv(N, 192) <= 2 * sms


def _wide_candidates(M, N, K, batch):
    """WIDE_TILES where 128 x 192 tiles fill at most two waves of programs, and those of
    WIDE_SPLIT with K split where their tiles fill under half a wave (one matrix; the
    driver's split counts)."""
    if not _wide_fits(M, N, spec("multiprocessors")):
        return []
    out = [(*t[:5], t[5], WIDE) for t in WIDE_TILES]
    if batch == 1:
        for t in (WIDE_TILES[i] for i in WIDE_SPLIT):
            splits = spec("mm_split_k_candidates", cdiv(M, t[0]) * cdiv(N, t[1] + t[5]), K)
            out += [(*t[:5], s, t[5], WIDE) for s in splits or ()]
    return out


# 32-wide steps of K, four of them in flight: tests_gpu/harness/tune_mm.py on ResNet-50's
# channels_last 1x1 convolutions as products (H200, session 28, 1,568 to 25,088 pixels by
# 128 to 2,048 channels, three layouts: `tune_mm_1x1.log`) found them faster than each of
# the pointer kernel's former candidates in 9 of 18 cases, by 2 to 9 points of cuBLAS
# (25,088 x 512 x 256 "nt", a forward: 77% -> 84%; 25,088 x 128 x 512 "nt" 83% -> 92%;
# the TMA kernel was not in that harness).
SHORT_STEPS = [(128, 128, 32, 4, 4), (128, 256, 32, 8, 4)]

# Tiles for products with a side under 256 and much work: the 1x1 convolutions of
# ResNet-50 as one product over their pixels (channels_last: 100,352 x 64 -> 64 at 56x56,
# 25,088 x 128 -> 512 at 28x28) or a product per image (NCHW), memory bound where K or N
# is 64: long tiles along the long side, K in one or two steps.
SKINNY = [(128, 64, 64, 4, 3), (256, 64, 64, 8, 3), (128, 128, 64, 4, 3), (128, 128, 64, 8, 3),
          (256, 128, 64, 8, 3), (64, 64, 64, 4, 3), (128, 256, 64, 8, 3), (64, 128, 64, 4, 4),
          (64, 256, 64, 8, 3)]  # fmt: skip
SKINNY_WORK = 1 << 27  # multiply-adds from which such a product tunes


def _skinny_candidates(first, M, N, K, batch):
    """mm_candidates for a side under 256: the table's, then SKINNY's and SHORT_STEPS'
    128 x 128 (not its 128 x 256), each cut to the matrix (powers of two, at least 16;
    duplicates dropped), where the product has at least SKINNY_WORK multiply-adds and
    every side 16; the table's alone otherwise."""
    if min(M, N, K) < 16 or batch * M * N * K < SKINNY_WORK:
        return [first]
    out = [tuple(first)]
    for cfg in (*SKINNY, *SHORT_STEPS[:1]):
        bm, bn, _ = tiles_of(M, N, cfg)  # as the launch cuts them
        out.append((bm, bn, max(16, pow2_at_most(K, cfg[2])), *cfg[3:]))
    return list(dict.fromkeys(out))
