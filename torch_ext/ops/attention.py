"""Fused scaled-dot-product attention (flash-attention style), forward and
backward; plain kernels (3) for torch_ext:: ops or an SDPA registration.

  flash_attention_fwd(q, k, v, attn_mask?, is_causal, scale?) -> (out, lse)
  flash_attention_bwd(grad_out, q, k, v, out, lse, attn_mask?, is_causal, scale?)
      -> (dq, dk, dv)
q (B, H, Lq, D), k (B, Hkv, Lk, D), v (B, Hkv, Lk, Dv), any strides, H a
multiple of Hkv (grouped-query attention: query head h reads kv head h // (H/Hkv)); attn_mask
broadcastable to (B, H, Lq, Lk), bool (True = attend) or additive float;
is_causal masks key j > query i (PyTorch's top-left alignment).  lse (B, H, Lq)
float32 is the row log-sum-exp of the scaled scores, kept for backward.
Dropout is not fused (p must be 0).
"""

import math

import torch
import triton
import triton.language as tl

from ..backends import spec
from ._launch import cdiv, launch, next_pow2
from ._common import kernel


@triton.jit
def _scores(
    q_t,
    k_ptrs,
    kmask,
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
    # Scaled scores of a (BLOCK_M, BLOCK_N) tile, -inf where masked.
    k_t = tl.load(k_ptrs, mask=kmask, other=0)
    if UPCAST:
        k_t = k_t.to(tl.float32)
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
    CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
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
        s = _scores(
            q_t,
            k_ptrs,
            (cols < Lk)[None, :] & (rd < D)[:, None],
            m_ptrs,
            rm,
            rn,
            n0,
            Lq,
            Lk,
            scale,
            CAUSAL,
            HAS_MASK,
            BOOL_MASK,
            UPCAST,
            PRECISION,
        )
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
    BLOCK_M: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
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
    CAUSAL: tl.constexpr,
    HAS_MASK: tl.constexpr,
    BOOL_MASK: tl.constexpr,
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
    FOR_DQ: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    # FOR_DQ: a program owns BLOCK_M queries and loops over keys (dq);
    # otherwise it owns BLOCK_N keys and loops over queries (dk, dv).
    pid = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    b = bh // H
    h = bh % H
    rd = tl.arange(0, BLOCK_D)
    rdv = tl.arange(0, BLOCK_DV)
    if FOR_DQ:
        rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        q_t, g_t, lse_t, dl_t = _query_tile(
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
            UPCAST,
        )
        acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
        end = Lk
        if CAUSAL:
            end = tl.minimum(Lk, (pid + 1) * BLOCK_M)
        for n0 in range(0, end, BLOCK_N):
            rn = tl.arange(0, BLOCK_N)
            cols = n0 + rn
            k_ptrs = k + b * skb + (h // G) * skh + cols[None, :] * skl + rd[:, None] * skd
            m_ptrs = mask + b * smb + h * smh + rm[:, None] * sml + cols[None, :] * smn
            s = _scores(
                q_t,
                k_ptrs,
                (cols < Lk)[None, :] & (rd < D)[:, None],
                m_ptrs,
                rm,
                rn,
                n0,
                Lq,
                Lk,
                scale,
                CAUSAL,
                HAS_MASK,
                BOOL_MASK,
                UPCAST,
                PRECISION,
            )
            p = tl.exp(s - lse_t[:, None])
            vT = tl.load(
                v + b * svb + (h // G) * svh + cols[None, :] * svl + rdv[:, None] * svd,
                mask=(cols < Lk)[None, :] & (rdv < DV)[:, None],
                other=0,
            )
            if UPCAST:
                vT = vT.to(tl.float32)
            dp = tl.dot(g_t, vT, input_precision=PRECISION, out_dtype=tl.float32)
            ds = p * (dp - dl_t[:, None])
            k_n = tl.load(
                k + b * skb + (h // G) * skh + cols[:, None] * skl + rd[None, :] * skd,
                mask=(cols < Lk)[:, None] & (rd < D)[None, :],
                other=0,
            )
            if UPCAST:
                k_n = k_n.to(tl.float32)
            acc += tl.dot(ds.to(k_n.dtype), k_n, input_precision=PRECISION, out_dtype=tl.float32)
        tl.store(
            dq + b * dqb + h * dqh + rm[:, None] * dql + rd[None, :] * dqd,
            (acc * scale).to(dq.dtype.element_ty),
            mask=(rm < Lq)[:, None] & (rd < D)[None, :],
        )
    else:
        cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
        k_ptrs = k + b * skb + (h // G) * skh + cols[None, :] * skl + rd[:, None] * skd
        kmask = (cols < Lk)[None, :] & (rd < D)[:, None]
        v_n = tl.load(
            v + b * svb + (h // G) * svh + cols[:, None] * svl + rdv[None, :] * svd,
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
        for m0 in range(start, Lq, BLOCK_M):
            rm = m0 + tl.arange(0, BLOCK_M)
            q_t, g_t, lse_t, dl_t = _query_tile(
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
                UPCAST,
            )
            m_ptrs = mask + b * smb + h * smh + rm[:, None] * sml + cols[None, :] * smn
            s = _scores(
                q_t,
                k_ptrs,
                kmask,
                m_ptrs,
                rm,
                cols - pid * BLOCK_N,
                pid * BLOCK_N,
                Lq,
                Lk,
                scale,
                CAUSAL,
                HAS_MASK,
                BOOL_MASK,
                UPCAST,
                PRECISION,
            )
            p = tl.exp(s - lse_t[:, None])
            dv_acc += tl.dot(
                tl.trans(p).to(g_t.dtype), g_t, input_precision=PRECISION, out_dtype=tl.float32
            )
            dp = tl.dot(g_t, tl.trans(v_n), input_precision=PRECISION, out_dtype=tl.float32)
            ds = p * (dp - dl_t[:, None])
            dk_acc += tl.dot(
                tl.trans(ds).to(q_t.dtype), q_t, input_precision=PRECISION, out_dtype=tl.float32
            )
        tl.store(
            dk + b * dkb + h * dkh + cols[:, None] * dkl + rd[None, :] * dkd,
            (dk_acc * scale).to(dk.dtype.element_ty),
            mask=(cols < Lk)[:, None] & (rd < D)[None, :],
        )
        tl.store(
            dv + b * dvb + h * dvh + cols[:, None] * dvl + rdv[None, :] * dvd,
            dv_acc.to(dv.dtype.element_ty),
            mask=(cols < Lk)[:, None] & (rdv < DV)[None, :],
        )


def _setup(q, k, v, attn_mask, scale):
    if q.dim() != 4:
        raise NotImplementedError("torch_ext: flash attention takes (B, H, L, D) tensors")
    B, H, Lq, D = q.shape
    HK, Lk, DV = k.shape[1], k.shape[2], v.shape[3]
    if k.shape[0] != B or v.shape[:3] != (B, HK, Lk) or H % HK:
        raise ValueError(
            "torch_ext: flash attention shapes: q (B, H, Lq, D), k (B, Hkv, Lk, D), "
            "v (B, Hkv, Lk, Dv) with H a multiple of Hkv"
        )
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    if attn_mask is not None:
        mask = attn_mask.expand(B, H, Lq, Lk)
        mstrides = mask.stride()
        bool_mask = mask.dtype == torch.bool
    else:
        mask, mstrides, bool_mask = q, (0, 0, 0, 0), False
    upcast = bool(spec("dot_needs_fp32_inputs", q.dtype))
    precision = "ieee" if q.dtype in (torch.float32, torch.float64) or upcast else None
    bm, bn = spec("attention_blocks", Lq, Lk, D) or (64, 64)
    bm = max(16, min(bm, next_pow2(Lq)))
    bn = max(16, min(bn, next_pow2(Lk)))
    bd = max(16, next_pow2(D))
    bdv = max(16, next_pow2(DV))
    return (
        B,
        H,
        H // HK,
        Lq,
        Lk,
        D,
        DV,
        scale,
        mask,
        mstrides,
        bool_mask,
        upcast,
        precision,
        bm,
        bn,
        bd,
        bdv,
    )


def _empty_like_layout(q, shape):
    """An output of `shape` whose dimensions are laid out in q's order, as
    PyTorch's attention paths return it (a (B, L, H, D) buffer seen as
    (B, H, L, D) stays so); compiled graphs plan their views on that."""
    order = sorted(range(len(shape)), key=lambda i: (-q.stride(i), i))
    buf = torch.empty([shape[i] for i in order], dtype=q.dtype, device=q.device)
    return buf.permute([order.index(i) for i in range(len(shape))])


def flash_attention_fwd(q, k, v, attn_mask=None, is_causal=False, scale=None):
    (B, H, G, Lq, Lk, D, DV, scale, mask, mst, bool_mask, upcast, precision, bm, bn, bd, bdv) = (
        _setup(q, k, v, attn_mask, scale)
    )
    out = _empty_like_layout(q, (B, H, Lq, DV))
    lse = torch.empty((B, H, Lq), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    launch(
        _attn_fwd_kernel,
        (cdiv(Lq, bm), B * H),
        q,
        k,
        v,
        out,
        lse,
        mask,
        H,
        G,
        Lq,
        Lk,
        D,
        DV,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *out.stride(),
        *mst,
        scale,
        CAUSAL=bool(is_causal),
        HAS_MASK=attn_mask is not None,
        BOOL_MASK=bool_mask,
        UPCAST=upcast,
        PRECISION=precision,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_D=bd,
        BLOCK_DV=bdv,
    )
    return out, lse


def flash_attention_bwd(grad_out, q, k, v, out, lse, attn_mask=None, is_causal=False, scale=None):
    (B, H, G, Lq, Lk, D, DV, scale, mask, mst, bool_mask, upcast, precision, bm, bn, bd, bdv) = (
        _setup(q, k, v, attn_mask, scale)
    )
    # Gradients in their inputs' layouts, as PyTorch's attention backward gives them.
    dq, dk, dv = (_empty_like_layout(t, t.shape) for t in (q, k, v))
    # Grouped heads: per-query-head dk/dv in float32, summed over each group after.
    dk_h = dk if G == 1 else torch.empty((B, H, Lk, D), dtype=torch.float32, device=q.device)
    dv_h = dv if G == 1 else torch.empty((B, H, Lk, DV), dtype=torch.float32, device=q.device)
    if q.numel() == 0 or k.numel() == 0:
        from .copy import fill_

        for t in (dq, dk, dv):
            fill_(t, 0)
        return dq, dk, dv
    delta = torch.empty((B, H, Lq), dtype=torch.float32, device=q.device)
    launch(
        _attn_bwd_delta_kernel,
        (cdiv(Lq, bm), B * H),
        out,
        grad_out,
        delta,
        H,
        Lq,
        DV,
        *out.stride(),
        *grad_out.stride(),
        BLOCK_M=bm,
        BLOCK_DV=bdv,
    )
    flags = dict(
        CAUSAL=bool(is_causal),
        HAS_MASK=attn_mask is not None,
        BOOL_MASK=bool_mask,
        UPCAST=upcast,
        PRECISION=precision,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_D=bd,
        BLOCK_DV=bdv,
    )
    common = (
        q,
        k,
        v,
        grad_out,
        lse,
        delta,
        dq,
        dk_h,
        dv_h,
        mask,
        H,
        G,
        Lq,
        Lk,
        D,
        DV,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *grad_out.stride(),
        *mst,
        *dq.stride(),
        *dk_h.stride(),
        *dv_h.stride(),
        scale,
    )
    launch(_attn_bwd_kernel, (cdiv(Lk, bn), B * H), *common, FOR_DQ=False, **flags)
    launch(_attn_bwd_kernel, (cdiv(Lq, bm), B * H), *common, FOR_DQ=True, **flags)
    if G > 1:
        from .reduction import SUM, reduce_into

        reduce_into(dk_h.view(B, H // G, G, Lk, D), [2], dk, SUM)
        reduce_into(dv_h.view(B, H // G, G, Lk, DV), [2], dv, SUM)
    return dq, dk, dv


# aten::_scaled_dot_product_fused_attention_overrideable(_backward): PyTorch's
# fused-attention ops for out-of-tree backends, chosen by our _fused_sdp_choice
# when dropout_p == 0. Plain convention (3).
@kernel()
def sdpa_overrideable(query, key, value, attn_bias, dropout_p, is_causal, return_debug_mask, scale):
    if dropout_p != 0.0:
        raise NotImplementedError(
            "torch_ext: the fused attention kernel has no dropout "
            "(scaled_dot_product_attention takes the math path then)"
        )
    out, lse = flash_attention_fwd(query, key, value, attn_bias, is_causal, scale)
    none = torch.empty(0, device=query.device)
    seeds = torch.empty(0, dtype=torch.int64, device=query.device)
    return out, lse, none, none, query.shape[2], key.shape[2], seeds, seeds, none


@kernel()
def sdpa_overrideable_backward(
    grad_out,
    query,
    key,
    value,
    attn_bias,
    grad_input_mask,
    out,
    logsumexp,
    cum_seq_q,
    cum_seq_k,
    max_q,
    max_k,
    dropout_p,
    is_causal,
    philox_seed,
    philox_offset,
    scale,
):
    if grad_input_mask[3]:
        raise NotImplementedError("torch_ext: no gradient for attn_mask in the fused kernel")
    attn_bias = attn_bias if attn_bias is not None and attn_bias.numel() else None
    dq, dk, dv = flash_attention_bwd(
        grad_out.contiguous(), query, key, value, out, logsumexp, attn_bias, is_causal, scale
    )
    return dq, dk, dv, None
