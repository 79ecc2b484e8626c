"""What the attention kernels (ops/attention_kernels.py) share: base-2 scores and their
masks, the dropout mask drawn from Philox, the key tiles that need no mask, and a key
tile's scores. Imported by absolute name there, so that a saved copy of that file loads
on its own (tests_gpu/harness/attention_ab.py).
"""

import triton
import triton.language as tl

# Philox rounds of the dropout mask (Triton's default, cuRAND's); a global so that
# tests_gpu/harness/attention_dq.py can time fewer before the kernels compile.
PHILOX_ROUNDS = tl.constexpr(10)
LOG2E = tl.constexpr(1.4426950408889634)  # scores and log-sum-exps in base 2: exp2


@triton.jit
def _masked(s, r, c, m_ptrs, Lq, Lk, CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
            BOOL_MASK: tl.constexpr, LOG2: tl.constexpr = False):  # fmt: skip
    """Scores s with -inf where query r may not see key c (r, c broadcast to s's shape:
    rows x cols, or cols x rows in the transposed scores). LOG2: s is in base-2 units
    (the forward's), and so is an additive mask's share."""
    valid = (c < Lk) & (r < Lq)
    if CAUSAL:
        valid = valid & (c <= r)
    if HAS_MASK:
        mv = tl.load(m_ptrs, mask=valid, other=0)
        if BOOL_MASK:
            valid = valid & (mv != 0)
        elif LOG2:
            s = s + mv.to(tl.float32) * LOG2E
        else:
            s = s + mv.to(tl.float32)
    return tl.where(valid, s, -float("inf"))


@triton.jit
def _dropout_keep(seed, offset, bh, rm, c0, Lq, Lk, p_drop, BN: tl.constexpr,
                  TRANS: tl.constexpr = False):  # fmt: skip
    """Which probabilities of query rows rm and keys c0 .. c0 + BN (c0 a multiple of 8)
    survive dropout, as a (rows, BN) tile, (BN, rows) with TRANS. One Philox counter per
    (batch*head, query, group of 8 keys): (bh * Lq + row) * ceil(Lk / 8) + key // 8, its
    four 32-bit numbers as eight 16-bit ones, one a key in order (low half first), so
    that the forward and both backward kernels draw the same mask whatever their tiles.
    A key survives where its number is at least p_drop * 65536 (rounded): the drop rate
    within 2**-17 of p_drop, at an eighth of the Philox rounds of a counter per element
    (a counter per 4 keys made dropout cost the kernels 3-4x, H100)."""
    BM: tl.constexpr = rm.shape[0]
    groups = (Lk + 7) // 8
    gq = c0 // 8 + tl.arange(0, BN // 8)
    ctr = (bh * Lq + rm.to(tl.int64))[:, None] * groups + gq[None, :]
    r0, r1, r2, r3 = tl.randint4x(seed, offset + ctr, PHILOX_ROUNDS)
    # join(join(r0, r2), join(r1, r3))[.., a, b] = r(2a + b): row-major, key pair 4j + l
    # <- r_l; then each word's low and high halves to its pair's keys
    words = tl.reshape(tl.join(tl.join(r0, r2), tl.join(r1, r3)), (BM, BN // 2))
    halves = tl.reshape(tl.join(words & 0xFFFF, words >> 16), (BM, BN))
    threshold = tl.cast(p_drop * 65536.0 + 0.5, tl.uint32)
    keep = halves >= threshold
    if TRANS:
        keep = tl.trans(keep.to(tl.int8)) != 0
    return keep


@triton.jit
def _unmasked_end(lo, Lq, Lk, CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
                  BLOCK_N: tl.constexpr):  # fmt: skip
    """Keys [0, end) in whole BLOCK_N tiles that rows lo.. all see, with no mask."""
    end = Lk
    if CAUSAL:
        end = tl.minimum(end, lo + 1)  # keys up to the tile's first row
    end = (end // BLOCK_N) * BLOCK_N
    if HAS_MASK:
        end = 0
    return end


@triton.jit
def _key_scores(
    q_t, k_base, m_base, rm, cols, rd, Lq, Lk, D, skl, skd, sml, smn, scale,
    CHECK: tl.constexpr, CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    LOG2: tl.constexpr = False,
):  # fmt: skip
    """(keys^T, scaled scores) of key tile `cols` for query rows rm: the keys as a
    (BLOCK_D, BLOCK_N) tile (q @ k^T; the dQ kernel's k too, transposed back), the
    scores masked where CHECK."""
    k_t = tl.load(
        k_base + cols[None, :] * skl + rd[:, None] * skd,
        mask=(cols < Lk)[None, :] & (rd < D)[:, None],
        other=0,
    )
    if UPCAST:
        k_t = k_t.to(tl.float32)
    s = tl.dot(q_t, k_t, input_precision=PRECISION, out_dtype=tl.float32) * scale
    if CHECK:
        s = _masked(
            s, rm[:, None], cols[None, :], m_base + rm[:, None] * sml + cols[None, :] * smn,
            Lq, Lk, CAUSAL, HAS_MASK, BOOL_MASK, LOG2,
        )  # fmt: skip
    return k_t, s
