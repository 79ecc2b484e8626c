"""What the attention kernels (ops/attention_kernels.py) share: base-2 scores and their
masks, the dropout mask drawn from Philox, the key tiles that need no mask, a key
tile's scores, and the dK/dV kernel's step over one query tile either way round.
Imported by absolute name there, so that a saved copy of that file loads on its own
(tests_gpu/harness/attention_ab.py).
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
def _dropout_keep(seed, offset, bh, m0, c0, Lq, Lk, p_drop, BM: tl.constexpr,
                  BN: tl.constexpr, TRANS: tl.constexpr = False):  # fmt: skip
    """Which probabilities of query rows m0 .. m0 + BM and keys c0 .. c0 + BN (m0, c0
    multiples of 16) survive dropout, as a (BM, BN) tile, (BN, BM) with TRANS. One
    Philox counter per 8 (query, key) pairs: queries {r, r + 8} by keys
    {k, k + 1, k + 8, k + 9} (r % 16 < 8, k % 16 < 8 even); its four 32-bit numbers as
    eight 16-bit ones, the number (r // 8 % 2) * 2 + (k // 8 % 2), its low half for the
    even key. A key survives where its number is at least p_drop * 65536 (rounded): the
    drop rate within 2**-17 of p_drop. Each element computes its own counter and
    numbers, with nothing exchanged between threads: in the tensor-core layout of the
    scores a thread holds rows r and r + 8 and key pairs 8 apart, so its elements'
    counters repeat and the compiler computes each once (the forward's and dQ's
    tiles: 4 Philox evaluations a thread for 32 scores, as a counter per 8 keys of a
    row took, without its two layout exchanges through shared memory). The same
    function of (query, key) in every kernel, whatever their tiles."""
    i = tl.arange(0, BM)
    j = tl.arange(0, BN)
    nu4 = ((Lk + 15) // 16) * 4
    base = ((bh * ((Lq + 15) // 16) + m0 // 16) * 8) * nu4 + (c0 // 16) * 4
    row = ((i // 16) * 8 + i % 8).to(tl.int64) * nu4
    col = (j // 16) * 4 + (j % 8) // 2
    sel_r = (i // 8) % 2 * 2
    sel_c = (j // 8) % 2
    odd = j % 2
    if TRANS:
        ctr = base + row[None, :] + col[:, None]
        sel = sel_r[None, :] + sel_c[:, None]
        odd = odd[:, None]
    else:
        ctr = base + row[:, None] + col[None, :]
        sel = sel_r[:, None] + sel_c[None, :]
        odd = odd[None, :]
    r0, r1, r2, r3 = tl.randint4x(seed, offset + ctr, PHILOX_ROUNDS)
    word = tl.where(sel == 0, r0, tl.where(sel == 1, r1, tl.where(sel == 2, r2, r3)))
    half = tl.where(odd == 0, word & 0xFFFF, word >> 16)
    threshold = tl.cast(p_drop * 65536.0 + 0.5, tl.uint32)
    return half >= threshold


# DROPOUT modes of the attention kernels: no dropout, the mask drawn from Philox, drawn
# and kept (the forward), read from what the forward kept (the backward's kernels).
DRAW = tl.constexpr(1)
DRAW_KEEP = tl.constexpr(2)
KEPT = tl.constexpr(3)
# The kept mask: one float16 a query row and 8 keys, the integer 0..255 of their keep
# bits (key c at bit c % 8), rows (batch*head, query) in order, MASK_ROW(Lk) values a
# row (a multiple of 8: 16-byte rows); from the MASK_AT-th float16 of the `bits` buffer
# on, behind the draw's 64-bit offset (ops/attention.py keeps both in one buffer).
MASK_AT = tl.constexpr(8)


@triton.jit
def _mask_row(Lk):
    return (Lk + 63) // 64 * 8


@triton.jit
def _keep(seed, offset, bits, bh, m0, c0, Lq, Lk, p_drop, MODE: tl.constexpr,
          BM: tl.constexpr, BN: tl.constexpr, TRANS: tl.constexpr = False):  # fmt: skip
    """_dropout_keep's tile, drawn (DRAW, DRAW_KEEP: the forward stores it after with
    _store_kept) or read from what a forward kept (KEPT); 32 <= BN <= 128, c0 a
    multiple of BN. Unpacked by a tensor-core product, exact in float16 (integers below
    2048), whose result comes in the scores' own layout: each 8 keys' byte (BM, 16) @ a
    (16, BN) spread gives each key its byte, then its bit (a gather or a reshape there
    moved whole tiles through shared memory). A tile reads BM x BN / 8 values where
    drawing costs ten Philox rounds per 8 scores (twice over in the transposed dK/dV
    tile)."""
    if MODE == KEPT:
        i = m0 + tl.arange(0, BM)
        j = tl.arange(0, BN)
        w = tl.arange(0, 16)
        vals, R, col, col_ok = _kept_row(bits, bh, c0, Lq, Lk, BN)
        if TRANS:  # (BN, BM) = spread^T (BN, 16) @ bytes^T (16, BM)
            bt = tl.load(vals + i[None, :] * R + col[:, None],
                         mask=(i < Lq)[None, :] & col_ok[:, None], other=0.0)  # fmt: skip
            st = tl.where((j // 8)[:, None] == w[None, :], 1.0, 0.0).to(tl.float16)
            byte = tl.dot(st, bt, out_dtype=tl.float32).to(tl.int32)
            keep = ((byte >> (j % 8)[:, None]) & 1) != 0
        else:
            b = tl.load(vals + i[:, None] * R + col[None, :],
                        mask=(i < Lq)[:, None] & col_ok[None, :], other=0.0)  # fmt: skip
            spread = tl.where(w[:, None] == (j // 8)[None, :], 1.0, 0.0).to(tl.float16)
            byte = tl.dot(b, spread, out_dtype=tl.float32).to(tl.int32)
            keep = ((byte >> (j % 8)[None, :]) & 1) != 0
    else:
        keep = _dropout_keep(seed, offset, bh, m0, c0, Lq, Lk, p_drop, BM, BN, TRANS)
    return keep


@triton.jit
def _kept_row(bits, bh, c0, Lq, Lk, BN: tl.constexpr):
    """(head bh's first kept value, values a row, the key tile's 16 columns, which of
    them are its BN / 8 inside the row) of the kept mask (MASK_AT)."""
    R = _mask_row(Lk)
    col = c0 // 8 + tl.arange(0, 16)
    col_ok = (tl.arange(0, 16) < BN // 8) & (col < R)
    return (bits.to(tl.pointer_type(tl.float16)) + MASK_AT) + bh * Lq * R, R, col, col_ok


@triton.jit
def _store_kept(bits, ones, bh, m0, c0, Lq, Lk, BM: tl.constexpr, BN: tl.constexpr):
    """The forward keeps its (BM, BN) tile's mask, `ones` (1.0 kept, 0.0 dropped): each 8
    keys' byte, by a tensor-core product with a (BN, 16) table of powers of two, whose
    operand comes from the scores' layout in registers. `ones` must derive from the
    dropped probabilities, not from the draw: given the draw twice over (the probabilities
    and this), Triton 3.6 laid the draw out for the product, one Philox counter a score
    (2.5x slower forward, H200)."""
    i = m0 + tl.arange(0, BM)
    j = tl.arange(0, BN)
    w = tl.arange(0, 16)
    vals, R, col, col_ok = _kept_row(bits, bh, c0, Lq, Lk, BN)
    powers = tl.where((j // 8)[:, None] == w[None, :], (1 << (j % 8))[:, None], 0)
    byte = tl.dot(ones.to(tl.float16), powers.to(tl.float16), out_dtype=tl.float32)
    tl.store(vals + i[:, None] * R + col[None, :], byte.to(tl.float16),
             mask=(i < Lq)[:, None] & col_ok[None, :])  # fmt: skip


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
def _head_desc(x, nb, nh, L, D, sb, sh, sl, BR: tl.constexpr, BD: tl.constexpr):
    """A tensor descriptor of the (B, heads, L, D) tensor x (unit stride along D) in
    blocks of one head's BR rows: the tensor memory accelerator fetches them, zero past
    L and D (DESC: no addresses or masks in the kernels' loops)."""
    return tl.make_tensor_descriptor(
        x, shape=[nb, nh, L, D], strides=[sb, sh, sl, 1], block_shape=[1, 1, BR, BD]
    )


@triton.jit
def _desc_rows(desc, b, h, r0, BR: tl.constexpr, BD: tl.constexpr):
    """Rows r0 .. r0 + BR of head (b, h) through `desc` (_head_desc), as (BR, BD)."""
    return desc.load([b.to(tl.int32), h.to(tl.int32), r0, 0]).reshape(BR, BD)


@triton.jit
def _key_scores(
    q_t, k_base, k_desc, kb, kh, n0, m_base, rm, cols, rd, Lq, Lk, D, skl, skd, sml, smn,
    scale, CHECK: tl.constexpr, CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    LOG2: tl.constexpr = False, DESC: tl.constexpr = False,
):  # fmt: skip
    """(keys^T, scaled scores) of key tile `cols` (from n0) for query rows rm: the keys
    as a (BLOCK_D, BLOCK_N) tile (q @ k^T; the dQ kernel's k too, transposed back), by
    pointers from k_base or, with DESC, through k_desc (key head (kb, kh)); the scores
    masked where CHECK."""
    if DESC:
        k_t = tl.trans(_desc_rows(k_desc, kb, kh, n0, cols.shape[0], rd.shape[0]))
    else:
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


@triton.jit
def _kv_transposed(
    dk_acc, dv_acc, q_t, g_t, k_n, v_n, lse_r, dl_r, m_base, rm, cols, cols0, bh, m0, Lq, Lk,
    sml, smn, scale2, seed, offset, bits, p_drop, keep_scale, CHECK: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr, BOOL_MASK: tl.constexpr,
    PRECISION: tl.constexpr, DROPOUT: tl.constexpr, DQ_ATOMIC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """One query tile's step of _kv_tiles with the scores as keys x queries (as the
    accumulators dk, dv are laid out): dk, dv accumulated, and with DQ_ATOMIC the
    tile's dq share (else 0)."""
    qT = tl.trans(q_t)
    # base-2 scores as the forward's: exp2 takes them with no multiply by log2(e)
    sT = tl.dot(k_n, qT, input_precision=PRECISION, out_dtype=tl.float32) * scale2
    if CHECK:
        sT = _masked(
            sT, rm[None, :], cols[:, None], m_base + rm[None, :] * sml + cols[:, None] * smn,
            Lq, Lk, CAUSAL, HAS_MASK, BOOL_MASK, True,
        )  # fmt: skip
    pT = tl.exp2(sT - lse_r[None, :])
    pdT = pT
    if DROPOUT:
        keep = _keep(seed, offset, bits, bh, m0, cols0, Lq, Lk, p_drop, DROPOUT, BLOCK_M, BLOCK_N,
                     True)  # fmt: skip
        pdT = tl.where(keep, pT * keep_scale, 0.0)
    dv_acc += tl.dot(pdT.to(g_t.dtype), g_t, input_precision=PRECISION, out_dtype=tl.float32)
    dpT = tl.dot(v_n, tl.trans(g_t), input_precision=PRECISION, out_dtype=tl.float32)
    if DROPOUT:
        dpT = tl.where(keep, dpT * keep_scale, 0.0)
    dsT = (pT * (dpT - dl_r[None, :])).to(q_t.dtype)
    dk_acc += tl.dot(dsT, q_t, input_precision=PRECISION, out_dtype=tl.float32)
    dq_t = 0
    if DQ_ATOMIC:
        dq_t = tl.dot(tl.trans(dsT), k_n, input_precision=PRECISION, out_dtype=tl.float32)
    return dk_acc, dv_acc, dq_t


@triton.jit
def _kv_natural(
    dk_acc, dv_acc, q_t, g_t, k_n, v_n, lse_r, dl_r, m_base, rm, cols, cols0, bh, m0, Lq, Lk,
    sml, smn, scale2, seed, offset, bits, p_drop, keep_scale, CHECK: tl.constexpr,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr, BOOL_MASK: tl.constexpr,
    PRECISION: tl.constexpr, DROPOUT: tl.constexpr, DQ_ATOMIC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """One query tile's step of _kv_tiles with the scores as queries x keys: dk, dv
    accumulated, and with DQ_ATOMIC the tile's dq share (else 0)."""
    s = tl.dot(q_t, tl.trans(k_n), input_precision=PRECISION, out_dtype=tl.float32) * scale2
    if CHECK:
        s = _masked(
            s, rm[:, None], cols[None, :], m_base + rm[:, None] * sml + cols[None, :] * smn,
            Lq, Lk, CAUSAL, HAS_MASK, BOOL_MASK, True,
        )  # fmt: skip
    p = tl.exp2(s - lse_r[:, None])
    pd = p
    if DROPOUT:
        keep = _keep(seed, offset, bits, bh, m0, cols0, Lq, Lk, p_drop, DROPOUT, BLOCK_M, BLOCK_N)
        pd = tl.where(keep, p * keep_scale, 0.0)
    dv_acc += tl.dot(
        tl.trans(pd.to(g_t.dtype)), g_t, input_precision=PRECISION, out_dtype=tl.float32
    )
    dp = tl.dot(g_t, tl.trans(v_n), input_precision=PRECISION, out_dtype=tl.float32)
    if DROPOUT:
        dp = tl.where(keep, dp * keep_scale, 0.0)
    ds = (p * (dp - dl_r[:, None])).to(q_t.dtype)
    dk_acc += tl.dot(tl.trans(ds), q_t, input_precision=PRECISION, out_dtype=tl.float32)
    dq_t = 0
    if DQ_ATOMIC:
        dq_t = tl.dot(ds, k_n, input_precision=PRECISION, out_dtype=tl.float32)
    return dk_acc, dv_acc, dq_t
