"""The flash-attention Triton kernels of attention.py: the forward (online softmax, one
program per query tile) and the backward (delta = rowsum(dO * O), then dQ, dK, dV).
Dropout (DROPOUT) drops probabilities after the softmax's normaliser, from a Philox
number per (batch*head, query, key) that the backward regenerates.
"""

import triton
import triton.language as tl


@triton.jit
def _keys_t(k_ptrs, kmask, UPCAST: tl.constexpr):
    """A (BLOCK_D, BLOCK_N) tile of keys, transposed for q @ k^T."""
    k_t = tl.load(k_ptrs, mask=kmask, other=0)
    if UPCAST:
        k_t = k_t.to(tl.float32)
    return k_t


@triton.jit
def _scores(
    q_t,
    k_t,
    mask_ptrs,
    rm,
    rn,
    n0,
    Lq,
    Lk,
    scale,
    CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
):
    # Scaled scores of a (BLOCK_M, BLOCK_N) tile, -inf where masked; k_t from _keys_t.
    s = tl.dot(q_t, k_t, input_precision=PRECISION, out_dtype=tl.float32) * scale
    cols = n0 + rn
    valid = (cols < Lk)[None, :] & (rm < Lq)[:, None]
    if CAUSAL:
        valid = valid & (cols[None, :] <= rm[:, None])
    if HAS_MASK:
        mv = tl.load(mask_ptrs, mask=valid, other=0)
        if BOOL_MASK:
            valid = valid & (mv != 0)
        else:
            s = s + mv.to(tl.float32)
    return tl.where(valid, s, -float("inf"))


@triton.jit
def _dropout_keep(seed, offset, bh, rm, cols, Lq, Lk, p_drop):
    # Philox number of element (bh, row, col) of the (B*H, Lq, Lk) probabilities: the
    # forward and both backward kernels draw the same one, so the mask is regenerated
    idx = (bh * Lq + rm[:, None].to(tl.int64)) * Lk + cols[None, :].to(tl.int64)
    return tl.rand(seed, offset + idx) >= p_drop


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
    CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    DROPOUT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    if DROPOUT:  # the draw, for the backward (device tensors: replays write theirs)
        if (pid_m == 0) & (bh == 0):
            tl.store(seed_out, seed.to(tl.int64))
            tl.store(offset_out, offset.to(tl.int64))
    b = bh // H
    h = bh % H
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
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
    for n0 in range(0, end, BLOCK_N):
        cols = n0 + rn
        k_ptrs = k + b * skb + (h // G) * skh + cols[None, :] * skl + rd[:, None] * skd
        m_ptrs = mask + b * smb + h * smh + rm[:, None] * sml + cols[None, :] * smn
        k_t = _keys_t(k_ptrs, (cols < Lk)[None, :] & (rd < D)[:, None], UPCAST)
        s = _scores(
            q_t, k_t, m_ptrs, rm, rn, n0, Lq, Lk, scale, CAUSAL, HAS_MASK, BOOL_MASK, UPCAST,
            PRECISION,
        )  # fmt: skip
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        v_t = tl.load(
            v + b * svb + (h // G) * svh + cols[:, None] * svl + rdv[None, :] * svd,
            mask=(cols < Lk)[:, None] & (rdv < DV)[None, :],
            other=0,
        )
        if UPCAST:
            v_t = v_t.to(tl.float32)
        if DROPOUT:  # after l_i: the normaliser sums the probabilities before dropout
            keep = _dropout_keep(seed, offset, bh, rm, cols, Lq, Lk, p_drop)
            p = tl.where(keep, p * keep_scale, 0.0)
        acc = acc * alpha[:, None] + tl.dot(
            p.to(v_t.dtype), v_t, input_precision=PRECISION, out_dtype=tl.float32
        )
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(
        o + b * sob + h * soh + rm[:, None] * sol + rdv[None, :] * sod,
        out.to(o.dtype.element_ty),
        mask=(rm < Lq)[:, None] & (rdv < DV)[None, :],
    )
    tl.store(lse + bh * Lq + rm, m_i + tl.log(l_i), mask=rm < Lq)


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
def _query_tile(
    q,
    do,
    lse,
    delta,
    b,
    h,
    bh,
    rm,
    rd,
    rdv,
    Lq,
    D,
    DV,
    sqb,
    sqh,
    sql,
    sqd,
    sgb,
    sgh,
    sgl,
    sgd,
    UPCAST: tl.constexpr,
):
    """Rows rm of q and of the output gradient, with their lse and delta."""
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
    lse_t = tl.load(lse + bh * Lq + rm, mask=rm < Lq, other=0)
    dl_t = tl.load(delta + bh * Lq + rm, mask=rm < Lq, other=0)
    return q_t, g_t, lse_t, dl_t


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
        rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        q_t, g_t, lse_t, dl_t = _query_tile(
            q, do, lse, delta, b, h, bh, rm, rd, rdv, Lq, D, DV, sqb, sqh, sql, sqd, sgb, sgh,
            sgl, sgd, UPCAST,
        )  # fmt: skip
        acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
        end = Lk
        if CAUSAL:
            end = tl.minimum(Lk, (pid + 1) * BLOCK_M)
        for n0 in range(0, end, BLOCK_N):
            rn = tl.arange(0, BLOCK_N)
            cols = n0 + rn
            k_ptrs = k + b * skb + (h // G) * skh + cols[None, :] * skl + rd[:, None] * skd
            m_ptrs = mask + b * smb + h * smh + rm[:, None] * sml + cols[None, :] * smn
            # one load of the keys serves both products (as k^T for the scores, as k for dq)
            k_t = _keys_t(k_ptrs, (cols < Lk)[None, :] & (rd < D)[:, None], UPCAST)
            s = _scores(
                q_t, k_t, m_ptrs, rm, rn, n0, Lq, Lk, scale, CAUSAL, HAS_MASK, BOOL_MASK, UPCAST,
                PRECISION,
            )  # fmt: skip
            p = tl.exp(s - lse_t[:, None])
            vT = tl.load(
                v + b * svb + (h // G) * svh + cols[None, :] * svl + rdv[:, None] * svd,
                mask=(cols < Lk)[None, :] & (rdv < DV)[:, None],
                other=0,
            )
            if UPCAST:
                vT = vT.to(tl.float32)
            dp = tl.dot(g_t, vT, input_precision=PRECISION, out_dtype=tl.float32)
            if DROPOUT:
                keep = _dropout_keep(seed, offset, bh, rm, cols, Lq, Lk, p_drop)
                dp = tl.where(keep, dp * keep_scale, 0.0)
            ds = p * (dp - dl_t[:, None])
            acc += tl.dot(
                ds.to(k_t.dtype), tl.trans(k_t), input_precision=PRECISION, out_dtype=tl.float32
            )
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
        # the program's keys, loaded once for every query tile of its loop
        k_t = _keys_t(
            k + b * skb + hk * skh + cols[None, :] * skl + rd[:, None] * skd,
            (cols < Lk)[None, :] & (rd < D)[:, None],
            UPCAST,
        )
        v_n = tl.load(
            v + b * svb + hk * svh + cols[:, None] * svl + rdv[None, :] * svd,
            mask=(cols < Lk)[:, None] & (rdv < DV)[None, :],
            other=0,
        )
        if UPCAST:
            v_n = v_n.to(tl.float32)
        dk_acc = tl.zeros((BLOCK_N, BLOCK_D), tl.float32)
        dv_acc = tl.zeros((BLOCK_N, BLOCK_DV), tl.float32)
        start = 0
        if CAUSAL:
            start = (pid * BLOCK_N // BLOCK_M) * BLOCK_M
        for gi in range(0, heads):
            h = h0 + gi
            bhq = b * H + h
            dk_acc, dv_acc = _kv_head_grads(
                q, do, lse, delta, mask, b, h, bhq, cols, rd, rdv, k_t, v_n,
                dk_acc, dv_acc, start, pid, seed, offset, p_drop, keep_scale, scale,
                Lq, Lk, D, DV, sqb, sqh, sql, sqd, sgb, sgh, sgl, sgd, smb, smh, sml, smn,
                dq, dqb, dqh, dql, dqd,
                CAUSAL, HAS_MASK, BOOL_MASK, UPCAST, PRECISION, DROPOUT, DQ_ATOMIC,
                BLOCK_M, BLOCK_N,
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


@triton.jit
def _kv_head_grads(
    q, do, lse, delta, mask, b, h, bh, cols, rd, rdv, k_t, v_n,
    dk_acc, dv_acc, start, pid, seed, offset, p_drop, keep_scale, scale,
    Lq, Lk, D, DV, sqb, sqh, sql, sqd, sgb, sgh, sgl, sgd, smb, smh, sml, smn,
    dq, dqb, dqh, dql, dqd,
    CAUSAL: tl.constexpr, HAS_MASK: tl.constexpr, BOOL_MASK: tl.constexpr,
    UPCAST: tl.constexpr, PRECISION: tl.constexpr, DROPOUT: tl.constexpr,
    DQ_ATOMIC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """dk, dv of keys `cols` from query head h (flat index bh), added to the accumulators;
    with DQ_ATOMIC, the query tiles' dq shares from these keys added into dq (float32)."""
    for m0 in range(start, Lq, BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        q_t, g_t, lse_t, dl_t = _query_tile(
            q, do, lse, delta, b, h, bh, rm, rd, rdv, Lq, D, DV, sqb, sqh, sql, sqd, sgb, sgh,
            sgl, sgd, UPCAST,
        )  # fmt: skip
        m_ptrs = mask + b * smb + h * smh + rm[:, None] * sml + cols[None, :] * smn
        s = _scores(
            q_t, k_t, m_ptrs, rm, cols - pid * BLOCK_N, pid * BLOCK_N, Lq, Lk, scale, CAUSAL,
            HAS_MASK, BOOL_MASK, UPCAST, PRECISION,
        )  # fmt: skip
        p = tl.exp(s - lse_t[:, None])
        pd = p
        if DROPOUT:
            keep = _dropout_keep(seed, offset, bh, rm, cols, Lq, Lk, p_drop)
            pd = tl.where(keep, p * keep_scale, 0.0)
        dv_acc += tl.dot(
            tl.trans(pd).to(g_t.dtype), g_t, input_precision=PRECISION, out_dtype=tl.float32
        )
        dp = tl.dot(g_t, tl.trans(v_n), input_precision=PRECISION, out_dtype=tl.float32)
        if DROPOUT:
            dp = tl.where(keep, dp * keep_scale, 0.0)
        ds = p * (dp - dl_t[:, None])
        dk_acc += tl.dot(
            tl.trans(ds).to(q_t.dtype), q_t, input_precision=PRECISION, out_dtype=tl.float32
        )
        if DQ_ATOMIC:
            dq_t = tl.dot(
                ds.to(k_t.dtype), tl.trans(k_t), input_precision=PRECISION, out_dtype=tl.float32
            )  # the program's keys as rows: the same tile as the scores' k^T
            tl.atomic_add(
                dq + b * dqb + h * dqh + rm[:, None] * dql + rd[None, :] * dqd,
                dq_t * scale,
                mask=(rm < Lq)[:, None] & (rd < D)[None, :],
                sem="relaxed",
            )
    return dk_acc, dv_acc
