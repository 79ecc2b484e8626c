"""The flash-attention Triton kernels of attention.py: the forward (online softmax, one
program per query tile) and the backward (delta = rowsum(dO * O), then dQ, dK, dV).
Dropout (DROPOUT) drops probabilities after the softmax's normaliser, from a Philox
number per (batch*head, query, key) that the backward regenerates.

Each kernel walks its tiles in two loops: the tiles that are wholly inside both lengths
and wholly below the causal diagonal take no mask (CHECK=False: no comparisons and no
select on the scores), the others (the diagonal's, a partial last tile, every tile under
an attention mask) take the full one. The dK/dV kernel computes the transposed scores
(keys x queries) so that none of its products needs a computed tile transposed.
"""

import triton
import triton.language as tl

from torch_ext.ops.attention_common import (
    LOG2E,
    _desc_rows,
    DRAW_KEEP,
    _keep,
    _store_kept,
    _head_desc,
    _key_scores,
    _kv_natural,
    _kv_transposed,
    _unmasked_end,
)


@triton.jit
def _fwd_tiles(
    acc, m_i, l_i, q_t, k_base, v_base, k_desc, v_desc, kb, kh, m_base, lo, hi, bh, m0, rm,
    rd, rdv, Lq, Lk, D, DV, skl, skd, svl, svd, sml, smn, scale, seed, offset, bits, p_drop,
    keep_scale, CHECK: tl.constexpr, CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    DROPOUT: tl.constexpr, DESC: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """The online softmax over key tiles [lo, hi) of one query tile, in base 2: `scale`
    includes log2(e), so exp2 takes the scores as they come (one multiply fewer per
    score than exp), and each tile's P @ V accumulates into the rescaled output. DESC:
    keys and values through the descriptors k_desc, v_desc (key head (kb, kh))."""
    for n0 in range(lo, hi, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        _, s = _key_scores(
            q_t, k_base, k_desc, kb, kh, n0, m_base, rm, cols, rd, Lq, Lk, D, skl, skd, sml,
            smn, scale, CHECK, CAUSAL, HAS_MASK, BOOL_MASK, UPCAST, PRECISION, True, DESC,
        )  # fmt: skip
        m_new = tl.maximum(m_i, tl.max(s, 1))
        if CHECK:
            m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        else:
            m_safe = m_new
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DESC:
            v_t = _desc_rows(v_desc, kb, kh, n0, BLOCK_N, rdv.shape[0])
        else:
            v_t = tl.load(
                v_base + cols[:, None] * svl + rdv[None, :] * svd,
                mask=(cols < Lk)[:, None] & (rdv < DV)[None, :],
                other=0,
            )
        if UPCAST:
            v_t = v_t.to(tl.float32)
        if DROPOUT:  # after l_i: the normaliser sums the probabilities before dropout
            keep = _keep(seed, offset, bits, bh, m0, n0, Lq, Lk, p_drop, DROPOUT, rm.shape[0],
                         BLOCK_N)  # fmt: skip
            if DROPOUT == DRAW_KEEP:  # dropped: -1, the kept mask taken from that
                p = tl.where(keep, p * keep_scale, -1.0)
                _store_kept(bits, tl.where(p == -1.0, 0.0, 1.0), bh, m0, n0, Lq, Lk,
                            rm.shape[0], BLOCK_N)  # fmt: skip
                p = tl.where(p == -1.0, 0.0, p)
            else:
                p = tl.where(keep, p * keep_scale, 0.0)
        acc = tl.dot(
            p.to(v_t.dtype), v_t, acc * alpha[:, None], input_precision=PRECISION,
            out_dtype=tl.float32,
        )  # fmt: skip
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _query_tile(HEAVY_FIRST: tl.constexpr):
    """This program's query tile. HEAVY_FIRST (causal): the grid's first programs take
    the last tiles, whose rows see the most keys, so that the light tiles fill the
    device's last wave instead of a heavy one running alone at the end."""
    if HEAVY_FIRST:
        return tl.num_programs(0) - 1 - tl.program_id(0)
    return tl.program_id(0)


@triton.jit
def _kv_descs(k, v, H, G, Lk, D, DV, skb, skh, skl, svb, svh, svl, DESC: tl.constexpr,
              BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr):  # fmt: skip
    """The keys' and values' descriptors (DESC; else zeros), from a grid of (query tiles,
    batch x query heads) programs."""
    kd = 0
    vd = 0
    if DESC:
        nb = tl.num_programs(1) // H
        kd = _head_desc(k, nb, H // G, Lk, D, skb, skh, skl, BLOCK_N, BLOCK_D)
        vd = _head_desc(v, nb, H // G, Lk, DV, svb, svh, svl, BLOCK_N, BLOCK_DV)
    return kd, vd


@triton.jit(do_not_specialize=["seed", "offset"])
def _attn_fwd_kernel(
    q,
    k,
    v,
    o,
    lse,
    mask,
    H,
    G,
    Lq,
    Lk,
    D,
    DV,
    sqb,
    sqh,
    sql,
    sqd,
    skb,
    skh,
    skl,
    skd,
    svb,
    svh,
    svl,
    svd,
    sob,
    soh,
    sol,
    sod,
    smb,
    smh,
    sml,
    smn,
    scale,
    seed,
    offset,
    p_drop,
    keep_scale,
    seed_out,
    offset_out,
    bits,
    CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    DROPOUT: tl.constexpr,
    DESC: tl.constexpr,
    HEAVY_FIRST: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    pid_m = _query_tile(HEAVY_FIRST)
    bh = tl.program_id(1).to(tl.int64)
    if DROPOUT:  # the draw, for the backward (device tensors: replays write theirs)
        if (tl.program_id(0) == 0) & (bh == 0):
            tl.store(seed_out, seed.to(tl.int64))
            tl.store(offset_out, offset.to(tl.int64))
    b = bh // H
    h = bh % H
    hk = h // G
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    rdv = tl.arange(0, BLOCK_DV)
    q_t = tl.load(
        q + b * sqb + h * sqh + rm[:, None] * sql + rd[None, :] * sqd,
        mask=(rm < Lq)[:, None] & (rd < D)[None, :],
        other=0,
    )
    if UPCAST:
        q_t = q_t.to(tl.float32)
    m_i = tl.zeros((BLOCK_M,), tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_DV), tl.float32)
    end = Lk
    if CAUSAL:
        end = tl.minimum(Lk, (pid_m + 1) * BLOCK_M)
    mid = _unmasked_end(pid_m * BLOCK_M, Lq, Lk, CAUSAL, HAS_MASK, BLOCK_N)
    k_base = k + b * skb + hk * skh
    v_base = v + b * svb + hk * svh
    m_base = mask + b * smb + h * smh
    k_desc, v_desc = _kv_descs(k, v, H, G, Lk, D, DV, skb, skh, skl, svb, svh, svl,
                               DESC, BLOCK_N, BLOCK_D, BLOCK_DV)  # fmt: skip
    scale2 = scale * LOG2E  # scores in base 2 (log2(e) folded in)
    acc, m_i, l_i = _fwd_tiles(
        acc, m_i, l_i, q_t, k_base, v_base, k_desc, v_desc, b, hk, m_base, 0, mid, bh,
        pid_m * BLOCK_M, rm, rd, rdv, Lq, Lk, D, DV, skl, skd, svl, svd, sml, smn, scale2,
        seed, offset, bits, p_drop, keep_scale, False, CAUSAL, HAS_MASK, BOOL_MASK, UPCAST,
        PRECISION, DROPOUT, DESC, BLOCK_N,
    )  # fmt: skip
    acc, m_i, l_i = _fwd_tiles(
        acc, m_i, l_i, q_t, k_base, v_base, k_desc, v_desc, b, hk, m_base, mid, end, bh,
        pid_m * BLOCK_M, rm, rd, rdv, Lq, Lk, D, DV, skl, skd, svl, svd, sml, smn, scale2,
        seed, offset, bits, p_drop, keep_scale, True, CAUSAL, HAS_MASK, BOOL_MASK, UPCAST,
        PRECISION, DROPOUT, DESC, BLOCK_N,
    )  # fmt: skip
    out = acc / l_i[:, None]
    tl.store(
        o + b * sob + h * soh + rm[:, None] * sol + rdv[None, :] * sod,
        out.to(o.dtype.element_ty),
        mask=(rm < Lq)[:, None] & (rdv < DV)[None, :],
    )
    # the log-sum-exp in natural units, as the backward (and PyTorch) read it
    tl.store(lse + bh * Lq + rm, (m_i + tl.log2(l_i)) * 0.6931471805599453, mask=rm < Lq)


@triton.jit
def _attn_bwd_delta_kernel(
    o,
    do,
    delta,
    H,
    Lq,
    DV,
    sob,
    soh,
    sol,
    sod,
    sgb,
    sgh,
    sgl,
    sgd,
    dq,
    D,
    dqb,
    dqh,
    dql,
    dqd,
    ZERO_DQ: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    # delta = rowsum(dO * O); ZERO_DQ: also zeroes these rows of dq, which the dK/dV
    # kernel then accumulates into atomically (DQ_ATOMIC)
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if ZERO_DQ:
        rd = tl.arange(0, BLOCK_D)
        tl.store(
            dq + b * dqb + h * dqh + rm[:, None] * dql + rd[None, :] * dqd,
            tl.zeros((BLOCK_M, BLOCK_D), dq.dtype.element_ty),
            mask=(rm < Lq)[:, None] & (rd < D)[None, :],
        )
    rdv = tl.arange(0, BLOCK_DV)
    m = (rm < Lq)[:, None] & (rdv < DV)[None, :]
    ov = tl.load(
        o + b * sob + h * soh + rm[:, None] * sol + rdv[None, :] * sod, mask=m, other=0
    ).to(tl.float32)
    gv = tl.load(
        do + b * sgb + h * sgh + rm[:, None] * sgl + rdv[None, :] * sgd, mask=m, other=0
    ).to(tl.float32)
    tl.store(delta + bh * Lq + rm, tl.sum(ov * gv, 1), mask=rm < Lq)


@triton.jit
def _dq_tiles(
    acc, q_t, g_t, lse_t, dl_t, k_base, v_base, k_desc, v_desc, kb, kh, m_base, lo, hi, bh,
    m0, rm, rd, rdv, Lq, Lk, D, DV, skl, skd, svl, svd, sml, smn, scale, seed, offset,
    bits, p_drop, keep_scale, CHECK: tl.constexpr, CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    DROPOUT: tl.constexpr, DESC: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """dq of one query tile over key tiles [lo, hi), in base 2 as the forward: `scale`
    and lse_t include log2(e). DESC: keys and values through k_desc, v_desc."""
    for n0 in range(lo, hi, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        # one load of the keys serves both products (as k^T for the scores, as k for dq)
        k_t, s = _key_scores(
            q_t, k_base, k_desc, kb, kh, n0, m_base, rm, cols, rd, Lq, Lk, D, skl, skd, sml,
            smn, scale, CHECK, CAUSAL, HAS_MASK, BOOL_MASK, UPCAST, PRECISION, True, DESC,
        )  # fmt: skip
        if DESC:
            vT = tl.trans(_desc_rows(v_desc, kb, kh, n0, BLOCK_N, rdv.shape[0]))
        else:
            vT = tl.load(
                v_base + cols[None, :] * svl + rdv[:, None] * svd,
                mask=(cols < Lk)[None, :] & (rdv < DV)[:, None],
                other=0,
            )
        if UPCAST:
            vT = vT.to(tl.float32)
        p = tl.exp2(s - lse_t[:, None])
        dp = tl.dot(g_t, vT, input_precision=PRECISION, out_dtype=tl.float32)
        if DROPOUT:
            keep = _keep(seed, offset, bits, bh, m0, n0, Lq, Lk, p_drop, DROPOUT, rm.shape[0],
                         BLOCK_N)  # fmt: skip
            dp = tl.where(keep, dp * keep_scale, 0.0)
        ds = p * (dp - dl_t[:, None])
        acc += tl.dot(
            ds.to(k_t.dtype), tl.trans(k_t), input_precision=PRECISION, out_dtype=tl.float32
        )
    return acc


@triton.jit
def _kv_tiles(
    dk_acc, dv_acc, k_n, v_n, q_base, g_base, lse_base, dl_base, m_base, dq_base, q_desc,
    g_desc, dq_desc, b, h, lo, hi, cols, cols0, rd, rdv, bh, Lq, Lk, D, DV, sql, sqd, sgl,
    sgd, sml, smn, dql, dqd, scale, seed, offset, bits, p_drop, keep_scale,
    CHECK: tl.constexpr, CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    DROPOUT: tl.constexpr, DQ_ATOMIC: tl.constexpr, DQ_TMA: tl.constexpr,
    DESC: tl.constexpr, NATURAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """dk, dv of keys `cols` (from cols0) from the query tiles [lo, hi) of one query head (flat index
    bh), added to the accumulators, through the transposed scores (keys x queries), or with
    NATURAL through the scores as the forward computes them (queries x keys: the dropout
    mask's counters fall one per thread's 8 scores, as in the forward, where the
    transposed tile draws each twice; P and dS are transposed for their products); with
    DQ_ATOMIC, the query tiles' dq shares from these keys added into dq (float32): by
    element, or with DQ_TMA as whole tiles through `dq_desc` (a (B, H, Lq, D) tensor
    descriptor: the tensor memory accelerator's bulk reduction into L2, clipped at the
    edges)."""
    scale2 = scale * LOG2E
    for m0 in range(lo, hi, BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        if DESC:
            q_t = _desc_rows(q_desc, b, h, m0, BLOCK_M, rd.shape[0])
            g_t = _desc_rows(g_desc, b, h, m0, BLOCK_M, rdv.shape[0])
        else:
            q_t = tl.load(
                q_base + rm[:, None] * sql + rd[None, :] * sqd,
                mask=(rm < Lq)[:, None] & (rd < D)[None, :],
                other=0,
            )
            g_t = tl.load(
                g_base + rm[:, None] * sgl + rdv[None, :] * sgd,
                mask=(rm < Lq)[:, None] & (rdv < DV)[None, :],
                other=0,
            )
        if UPCAST:
            q_t = q_t.to(tl.float32)
            g_t = g_t.to(tl.float32)
        lse_r = tl.load(lse_base + rm, mask=rm < Lq, other=0) * LOG2E
        dl_r = tl.load(dl_base + rm, mask=rm < Lq, other=0)
        if NATURAL:
            dk_acc, dv_acc, dq_t = _kv_natural(
                dk_acc, dv_acc, q_t, g_t, k_n, v_n, lse_r, dl_r, m_base, rm, cols, cols0, bh,
                m0, Lq, Lk, sml, smn, scale2, seed, offset, bits, p_drop, keep_scale, CHECK, CAUSAL,
                HAS_MASK, BOOL_MASK, PRECISION, DROPOUT, DQ_ATOMIC, BLOCK_M, BLOCK_N,
            )  # fmt: skip
        else:
            dk_acc, dv_acc, dq_t = _kv_transposed(
                dk_acc, dv_acc, q_t, g_t, k_n, v_n, lse_r, dl_r, m_base, rm, cols, cols0, bh,
                m0, Lq, Lk, sml, smn, scale2, seed, offset, bits, p_drop, keep_scale, CHECK, CAUSAL,
                HAS_MASK, BOOL_MASK, PRECISION, DROPOUT, DQ_ATOMIC, BLOCK_M, BLOCK_N,
            )  # fmt: skip
        if DQ_ATOMIC:
            if DQ_TMA:
                dq_desc.atomic_add(
                    [b.to(tl.int32), h.to(tl.int32), m0, 0],
                    tl.reshape(dq_t * scale, (1, 1) + dq_t.shape),
                )
            else:
                tl.atomic_add(
                    dq_base + rm[:, None] * dql + rd[None, :] * dqd,
                    dq_t * scale,
                    mask=(rm < Lq)[:, None] & (rd < D)[None, :],
                    sem="relaxed",
                )
    return dk_acc, dv_acc


@triton.jit
def _attn_bwd_kernel(
    q,
    k,
    v,
    do,
    lse,
    delta,
    dq,
    dk,
    dv,
    mask,
    H,
    G,
    Lq,
    Lk,
    D,
    DV,
    sqb,
    sqh,
    sql,
    sqd,
    skb,
    skh,
    skl,
    skd,
    svb,
    svh,
    svl,
    svd,
    sgb,
    sgh,
    sgl,
    sgd,
    smb,
    smh,
    sml,
    smn,
    dqb,
    dqh,
    dql,
    dqd,
    dkb,
    dkh,
    dkl,
    dkd,
    dvb,
    dvh,
    dvl,
    dvd,
    scale,
    seed_ptr,
    offset_ptr,
    bits,
    p_drop,
    keep_scale,
    CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    DROPOUT: tl.constexpr,
    FOR_DQ: tl.constexpr,
    GROUPED: tl.constexpr,
    DQ_ATOMIC: tl.constexpr,
    DQ_TMA: tl.constexpr,
    DESC: tl.constexpr,
    NATURAL: tl.constexpr,
    HEAVY_FIRST: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    # FOR_DQ: a program owns BLOCK_M queries and loops over keys (dq);
    # otherwise it owns BLOCK_N keys and loops over queries (dk, dv; with DQ_ATOMIC
    # also each query tile's share of dq, added atomically in float32). GROUPED (dk, dv
    # with G query heads per key head): program_id(1) is (batch, key head), the program
    # loops over the group's G query heads too and stores the summed dk, dv into the key
    # head's own gradient; otherwise it is (batch, query head) and stores that head's.
    pid = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    seed = 0
    offset = 0
    if DROPOUT:  # the forward's draw, from the tensors it wrote
        seed = tl.load(seed_ptr)
        offset = tl.load(offset_ptr)
    b = bh // H
    h = bh % H
    rd = tl.arange(0, BLOCK_D)
    rdv = tl.arange(0, BLOCK_DV)
    if FOR_DQ:
        pid = _query_tile(HEAVY_FIRST)
        rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        q_t = tl.load(
            q + b * sqb + h * sqh + rm[:, None] * sql + rd[None, :] * sqd,
            mask=(rm < Lq)[:, None] & (rd < D)[None, :],
            other=0,
        )
        g_t = tl.load(
            do + b * sgb + h * sgh + rm[:, None] * sgl + rdv[None, :] * sgd,
            mask=(rm < Lq)[:, None] & (rdv < DV)[None, :],
            other=0,
        )
        if UPCAST:
            q_t = q_t.to(tl.float32)
            g_t = g_t.to(tl.float32)
        lse_t = tl.load(lse + bh * Lq + rm, mask=rm < Lq, other=0) * LOG2E
        dl_t = tl.load(delta + bh * Lq + rm, mask=rm < Lq, other=0)
        acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
        end = Lk
        if CAUSAL:
            end = tl.minimum(Lk, (pid + 1) * BLOCK_M)
        mid = _unmasked_end(pid * BLOCK_M, Lq, Lk, CAUSAL, HAS_MASK, BLOCK_N)
        hk = h // G
        scale2 = scale * LOG2E
        k_base = k + b * skb + hk * skh
        v_base = v + b * svb + hk * svh
        m_base = mask + b * smb + h * smh
        k_desc, v_desc = _kv_descs(k, v, H, G, Lk, D, DV, skb, skh, skl, svb, svh, svl,
                                   DESC, BLOCK_N, BLOCK_D, BLOCK_DV)  # fmt: skip
        acc = _dq_tiles(
            acc, q_t, g_t, lse_t, dl_t, k_base, v_base, k_desc, v_desc, b, hk, m_base, 0, mid,
            bh, pid * BLOCK_M, rm, rd, rdv, Lq, Lk, D, DV, skl, skd, svl, svd, sml, smn, scale2,
            seed, offset, bits, p_drop, keep_scale, False, CAUSAL, HAS_MASK, BOOL_MASK, UPCAST,
            PRECISION, DROPOUT, DESC, BLOCK_N,
        )  # fmt: skip
        acc = _dq_tiles(
            acc, q_t, g_t, lse_t, dl_t, k_base, v_base, k_desc, v_desc, b, hk, m_base, mid, end,
            bh, pid * BLOCK_M, rm, rd, rdv, Lq, Lk, D, DV, skl, skd, svl, svd, sml, smn, scale2,
            seed, offset, bits, p_drop, keep_scale, True, CAUSAL, HAS_MASK, BOOL_MASK, UPCAST,
            PRECISION, DROPOUT, DESC, BLOCK_N,
        )  # fmt: skip
        tl.store(
            dq + b * dqb + h * dqh + rm[:, None] * dql + rd[None, :] * dqd,
            (acc * scale).to(dq.dtype.element_ty),
            mask=(rm < Lq)[:, None] & (rd < D)[None, :],
        )
    else:
        if GROUPED:
            b = bh // (H // G)
            hk = bh % (H // G)
            h0 = hk * G
            heads = G
            hs = hk  # the gradient's head: the key head
        else:
            hk = h // G
            h0 = h
            heads = 1
            hs = h
        cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
        # the program's keys and values as rows, loaded once for every query tile
        k_n = tl.load(
            k + b * skb + hk * skh + cols[:, None] * skl + rd[None, :] * skd,
            mask=(cols < Lk)[:, None] & (rd < D)[None, :],
            other=0,
        )
        v_n = tl.load(
            v + b * svb + hk * svh + cols[:, None] * svl + rdv[None, :] * svd,
            mask=(cols < Lk)[:, None] & (rdv < DV)[None, :],
            other=0,
        )
        if UPCAST:
            k_n = k_n.to(tl.float32)
            v_n = v_n.to(tl.float32)
        dk_acc = tl.zeros((BLOCK_N, BLOCK_D), tl.float32)
        dv_acc = tl.zeros((BLOCK_N, BLOCK_DV), tl.float32)
        start = 0
        mid = 0  # query tiles from `mid` on see every key of the program, with no mask
        if CAUSAL:
            start = (pid * BLOCK_N // BLOCK_M) * BLOCK_M
            mid = tl.cdiv((pid + 1) * BLOCK_N - 1, BLOCK_M) * BLOCK_M
        if HAS_MASK:
            mid = Lq
        mid = tl.where((pid + 1) * BLOCK_N > Lk, Lq, mid)  # a partial key tile: all masked
        mid = tl.maximum(mid, start)
        nb = tl.num_programs(1) // (H // heads)  # the batches (grid: batch x heads)
        dq_desc = 0
        q_desc = 0
        g_desc = 0
        if DQ_TMA:  # the float32 dQ buffer, added into by whole tiles
            dq_desc = _head_desc(dq, nb, H, Lq, D, dqb, dqh, dql, BLOCK_M, BLOCK_D)
        if DESC:
            q_desc = _head_desc(q, nb, H, Lq, D, sqb, sqh, sql, BLOCK_M, BLOCK_D)
            g_desc = _head_desc(do, nb, H, Lq, DV, sgb, sgh, sgl, BLOCK_M, BLOCK_DV)
        for gi in range(0, heads):
            h = h0 + gi
            bhq = b * H + h
            q_base = q + b * sqb + h * sqh
            g_base = do + b * sgb + h * sgh
            m_base = mask + b * smb + h * smh
            dq_base = dq + b * dqb + h * dqh
            dk_acc, dv_acc = _kv_tiles(
                dk_acc, dv_acc, k_n, v_n, q_base, g_base, lse + bhq * Lq, delta + bhq * Lq,
                m_base, dq_base, q_desc, g_desc, dq_desc, b, h, start, tl.minimum(mid, Lq),
                cols, pid * BLOCK_N, rd, rdv, bhq, Lq, Lk, D, DV, sql, sqd, sgl, sgd, sml, smn,
                dql, dqd, scale, seed, offset, bits, p_drop, keep_scale, True, CAUSAL, HAS_MASK,
                BOOL_MASK, UPCAST, PRECISION, DROPOUT, DQ_ATOMIC, DQ_TMA, DESC, NATURAL, BLOCK_M,
                BLOCK_N,
            )  # fmt: skip
            dk_acc, dv_acc = _kv_tiles(
                dk_acc, dv_acc, k_n, v_n, q_base, g_base, lse + bhq * Lq, delta + bhq * Lq,
                m_base, dq_base, q_desc, g_desc, dq_desc, b, h, mid, Lq,
                cols, pid * BLOCK_N, rd, rdv, bhq, Lq, Lk, D, DV, sql, sqd, sgl, sgd, sml, smn,
                dql, dqd, scale, seed, offset, bits, p_drop, keep_scale, False, CAUSAL, HAS_MASK,
                BOOL_MASK, UPCAST, PRECISION, DROPOUT, DQ_ATOMIC, DQ_TMA, DESC, NATURAL, BLOCK_M,
                BLOCK_N,
            )  # fmt: skip
        tl.store(
            dk + b * dkb + hs * dkh + cols[:, None] * dkl + rd[None, :] * dkd,
            (dk_acc * scale).to(dk.dtype.element_ty),
            mask=(cols < Lk)[:, None] & (rd < D)[None, :],
        )
        tl.store(
            dv + b * dvb + hs * dvh + cols[:, None] * dvl + rdv[None, :] * dvd,
            dv_acc.to(dv.dtype.element_ty),
            mask=(cols < Lk)[:, None] & (rdv < DV)[None, :],
        )
