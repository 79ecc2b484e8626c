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
dropout: (p, seed, offset) of a Philox draw (random.philox_draw), or None; the
forward writes seed and offset to device tensors, from which the backward's kernels
read them to regenerate the mask.
"""

import math
import torch

from ..backends import spec
from . import _symbolic
from ._launch import cdiv, launch, next_pow2, pow2_at_most
from ._common import contiguous
from ._symbolic import expand_strides, numel, sizes, strides
from ._declare import kernel
from .random import philox_draw
from .attention_common import DRAW, DRAW_KEEP, KEPT, MASK_AT
from .attention_kernels import _attn_fwd_kernel, _attn_bwd_delta_kernel, _attn_bwd_kernel
from .. import config
from .copy import copy_kernel
from .matmul_tma import ensure_allocator


def _setup(q, k, v, attn_mask, scale):
    # Sizes and strides through _symbolic: the forward's launch plan serves every KV
    # length of a decode (sdpa_overrideable is declared shapes=True).
    if q.dim() != 4:
        raise NotImplementedError("torch_ext: flash attention takes (B, H, L, D) tensors")
    B, H, Lq, D = sizes(q)
    k_shape, v_shape = sizes(k), sizes(v)
    HK, Lk, DV = k_shape[1], k_shape[2], v_shape[3]
    if k_shape[0] != B or k_shape[3] != D or v_shape[:3] != (B, HK, Lk) or H % HK:
        raise RuntimeError(
            "scaled_dot_product_attention expects query (B, H, Lq, E), key (B, Hkv, Lk, E) "
            "and value (B, Hkv, Lk, Ev) with H a multiple of Hkv, but got query "
            f"{list(q.shape)}, key {list(k.shape)} and value {list(v.shape)}"
        )
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    if attn_mask is not None:
        if attn_mask.dim() > 4:
            raise ValueError("torch_ext: flash attention's mask broadcasts to (B, H, Lq, Lk)")
        # the mask read in place, broadcast by its strides (as expand would)
        mask, mstrides = attn_mask, expand_strides(attn_mask, (B, H, Lq, Lk))
        bool_mask = mask.dtype == torch.bool
    else:
        mask, mstrides, bool_mask = q, (0, 0, 0, 0), False
    upcast = bool(spec("dot_needs_fp32_inputs", q.dtype))
    precision = "ieee" if q.dtype in (torch.float32, torch.float64) or upcast else None
    bd, bdv, bm, bn, stages = _shared_tiles(q, Lq, Lk, D, DV)
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
        stages,
    )


def _shared_tiles(q, Lq, Lk, D, DV):
    """(BLOCK_D, BLOCK_DV, BLOCK_M, BLOCK_N, pipeline stages of the forward, dK/dV and dQ
    kernels): heads padded to powers of two, tiles a driver bounds by its shared memory
    (None: the compiler's default), no longer than the sequences (at least 16)."""
    bd, bdv = max(16, next_pow2(D)), max(16, next_pow2(DV))
    tiles = spec("attention_tiles", max(bd, bdv), q.element_size())
    bm, bn, *stages = tiles or (64, 64, None, None, None)
    return bd, bdv, max(16, pow2_at_most(Lq, bm)), max(16, pow2_at_most(Lk, bn)), stages


def _heavy_first(kind, is_causal):
    """Whether the `kind` ("fwd", "dq") kernel takes its query tiles heaviest first
    (attention_kernels._query_tile): under a causal mask, where the last tiles see the
    most keys, and where the driver says so (spec `attention_heavy_first(kind)`). The
    dK/dV kernel's first key tiles are its heaviest already."""
    return bool(is_causal) and bool(spec("attention_heavy_first", kind))


def _stages(n):
    return {} if n is None else {"num_stages": n}


def _kernel_tiles(kind, q, Lq, Lk, bm, bn, stages, bd, bdv, dq_atomic=False, keeps=False):
    """(BLOCK_M, BLOCK_N, launch options) of one attention kernel: `kind` "fwd", "dkdv" or
    "dq". A driver may give a kernel tiles, warps and stages of its own (spec
    `attention_kernel_tiles(kind, head, itemsize, dq_atomic, queries, keeps_mask)` ->
    (BLOCK_M, BLOCK_N, warps, stages), or None for the shared tiles of `attention_tiles`;
    `dq_atomic`: the dK/dV kernel also adds dQ; `keeps`: the forward keeps its dropout
    mask): tests_gpu/harness/attention_tiles.py sweeps them on a GPU. Tiles stay powers
    of two no longer than the sequences (at least 16)."""
    own = spec("attention_kernel_tiles", kind, max(bd, bdv), q.element_size(), dq_atomic, Lq,
               keeps)  # fmt: skip
    if own is None:
        return bm, bn, _stages(stages)
    m, n, warps, nstages = own
    opts = _stages(nstages)
    if warps is not None:
        opts["num_warps"] = warps
    return max(16, pow2_at_most(Lq, m)), max(16, pow2_at_most(Lk, n)), opts


def _empty_in_layout(q, shape, dtype=None):
    """An output of `shape` whose dimensions are laid out in q's order, as PyTorch's
    attention paths return it (a (B, L, H, D) buffer seen as (B, H, L, D) stays so);
    compiled graphs plan their views on that. Sizes and strides stay expressions in a
    recording (_symbolic.empty)."""
    qs = strides(q)
    order = sorted(range(len(shape)), key=lambda i: (-qs[i], i))
    return _symbolic.empty(shape, dtype or q.dtype, q.device, order)


def _descriptors(kind, head, dq_atomic, *ts):
    """Whether the `kind` ("fwd", "bwd"; `dq_atomic`: the dK/dV kernel adds dQ) kernels
    read these (B, H, L, D) operands through tensor descriptors (DESC): the driver's
    choice (spec `attention_tma(kind, head, itemsize, dq_atomic)`, `head` padded), 16-bit
    elements, unit stride along D, the other strides and the base 16-byte aligned.
    Strides are compared, so that a launch plan recorded here is guarded on them
    (ops/_symbolic.py)."""
    size = ts[0].element_size()
    if size != 2 or not spec("attention_tma", kind, head, size, dq_atomic):
        return False
    for t in ts:
        st = strides(t)
        if t.data_ptr() % 16 or st[3] != 1 or any(s % 8 for s in st[:3]):
            return False
    return True


def keeps_dropout_mask(q, Lq, Lk, D, DV):
    """Whether a forward with dropout keeps its mask for the backward, whose kernels
    then read it instead of drawing Philox numbers again (TORCH_EXT_ATTENTION_DROPOUT_MASK:
    `keep`; `auto`: where the driver finds it faster, spec
    `attention_keep_dropout_mask(head, itemsize)`, and it takes no more memory than q,
    k, v and out, _row_bytes(Lk) a query row against 4 x D x element size: up to 4096
    keys at bf16 head 128). The forward's key tiles must hold 32 to 128 keys
    (attention_common._keep). The backward asks the same question of the same sizes
    (sdpa_overrideable_backward)."""
    mode = config.get("TORCH_EXT_ATTENTION_DROPOUT_MASK")
    if mode == "regenerate" or Lk < 32:
        return False
    bd, bdv, bm, bn, _ = _shared_tiles(q, Lq, Lk, D, DV)
    head, size = max(bd, bdv), q.element_size()
    _, fwd_n, _ = _kernel_tiles("fwd", q, Lq, Lk, bm, bn, None, bd, bdv)
    if not 32 <= fwd_n <= 128:
        return False
    if mode == "keep":
        return True
    return bool(spec("attention_keep_dropout_mask", head, size)) and _row_bytes(Lk) <= 4 * D * size


def _kept_bytes(B, H, Lq, Lk):
    """Bytes of the kept mask's buffer: the draw's offset, then a float16 per query row
    and 8 keys, rows of 16-byte multiples (attention_common._keep)."""
    return MASK_AT.value * 2 + B * H * Lq * _row_bytes(Lk)


def _row_bytes(Lk):
    return (Lk + 63) // 64 * 16


def _dropout_args(dropout, dummy):
    """The kernels' (seed, offset, p, 1 / (1 - p)) arguments and the DROPOUT flag.
    dropout: (p, seed, offset), ints for the forward, the 0-dim int64 tensors it
    wrote for the backward; None: no dropout (`dummy` fills the pointers)."""
    if dropout is None or dropout[0] == 0.0:
        return (0, 0, 0.0, 1.0) if dummy is None else (dummy, dummy, 0.0, 1.0), False
    p, seed, offset = dropout
    return (seed, offset, float(p), 0.0 if p >= 1.0 else 1.0 / (1.0 - p)), True


def flash_attention_fwd(
    q, k, v, attn_mask=None, is_causal=False, scale=None, dropout=None, philox=None, draw=None,
    bits=None,
):  # fmt: skip
    """(out, lse); with dropout (p, seed, offset) the kernel also writes seed and
    offset into `draw`, two 0-dim int64 device tensors, for the backward, and with
    `bits` (a buffer of _kept_bytes, where keeps_dropout_mask) the mask behind the offset
    (attention_common._keep)."""
    (B, H, G, Lq, Lk, D, DV, scale, mask, mst, bool_mask, upcast, precision, bm, bn, bd, bdv,
     stages) = _setup(q, k, v, attn_mask, scale)  # fmt: skip
    out = _empty_in_layout(q, (B, H, Lq, DV))
    lse = _symbolic.empty((B, H, Lq), torch.float32, q.device)
    if numel(out) == 0:
        return out, lse
    drop_args, has_dropout = _dropout_args(dropout, None)
    draw = draw if draw is not None else (lse, lse)
    bm, bn, opts = _kernel_tiles("fwd", q, Lq, Lk, bm, bn, stages[0], bd, bdv,
                                 keeps=bits is not None and has_dropout)  # fmt: skip
    mode = (DRAW_KEEP if bits is not None else DRAW) if has_dropout else 0
    if bits is not None and not 32 <= bn <= 128:
        raise RuntimeError("torch_ext: the attention forward keeps its mask on 32-128 key tiles")
    desc = _descriptors("fwd", max(bd, bdv), False, k, v)
    if desc:
        ensure_allocator(q.device)
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
        *strides(q),
        *strides(k),
        *strides(v),
        *strides(out),
        *mst,
        scale,
        *drop_args,
        *draw,
        bits if bits is not None else lse,
        philox=philox,
        CAUSAL=bool(is_causal),
        HAS_MASK=attn_mask is not None,
        BOOL_MASK=bool_mask,
        UPCAST=upcast,
        PRECISION=precision,
        DROPOUT=mode,
        DESC=desc,
        HEAVY_FIRST=_heavy_first("fwd", is_causal),
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_D=bd,
        BLOCK_DV=bdv,
        **opts,
    )
    return out, lse


def flash_attention_bwd(
    grad_out, q, k, v, out, lse, attn_mask=None, is_causal=False, scale=None, dropout=None,
    bits=None,
):  # fmt: skip
    """(dq, dk, dv); dropout (p, seed, offset): the forward's draw, as the 0-dim device
    tensors it wrote; `bits`: the buffer where it kept the mask (flash_attention_fwd),
    read instead of drawing again."""
    (B, H, G, Lq, Lk, D, DV, scale, mask, mst, bool_mask, upcast, precision, bm, bn, bd, bdv,
     stages) = _setup(q, k, v, attn_mask, scale)  # fmt: skip
    # Gradients in their inputs' layouts, as PyTorch's attention backward gives them.
    dq, dk, dv = (_empty_in_layout(t, sizes(t)) for t in (q, k, v))
    # dQ: its own kernel (each query tile loops over the keys: deterministic), or,
    # where the driver prefers it and deterministic algorithms are off (as CUDA's flash
    # attention), added atomically in float32 by the dK/dV kernel (no second pass over
    # the scores); into dq itself when float32, else into a buffer copied after.
    drop_args, has_dropout = _dropout_args(dropout, lse)
    kept = has_dropout and bits is not None
    # the kernels' choices where the mask is drawn (kept bits cost a load, as no dropout)
    draws = has_dropout and not kept
    atomic = not torch.are_deterministic_algorithms_enabled() and bool(
        spec("attention_dq_atomic", max(bd, bdv), q.element_size(), draws, Lq)
    )
    # Grouped heads (G query heads per key head): a dK/dV program loops over its key
    # head's G query heads and stores their sum, with no per-query-head copy of dk/dv,
    # where that leaves programs enough to fill the device (spec); else per-query-head
    # dk/dv in float32, summed over each group after (two launches, B*H*Lk*(D+DV)*4
    # bytes of temporaries).
    kv_m, kv_n, kv_opts = _kernel_tiles("dkdv", q, Lq, Lk, bm, bn, stages[1], bd, bdv, atomic)
    q_m, q_n, q_opts = _kernel_tiles("dq", q, Lq, Lk, bm, bn, stages[2], bd, bdv)
    # the kept mask is read in tiles of 32 to 128 keys; others draw (the same mask)
    kv_mode = KEPT if kept and 32 <= kv_n <= 128 else DRAW if has_dropout else 0
    q_mode = KEPT if kept and 32 <= q_n <= 128 else DRAW if has_dropout else 0
    grouped = G > 1 and cdiv(Lk, kv_n) * B * (H // G) >= (
        spec("attention_grouped_min_programs") or 0
    )
    separate = G > 1 and not grouped
    dk_h = _symbolic.empty((B, H, Lk, D), torch.float32, q.device) if separate else dk
    dv_h = _symbolic.empty((B, H, Lk, DV), torch.float32, q.device) if separate else dv
    if numel(q) == 0 or numel(k) == 0:
        from .copy import fill_

        for t in (dq, dk, dv):
            fill_(t, 0)
        return dq, dk, dv
    delta = _symbolic.empty((B, H, Lq), torch.float32, q.device)
    # the atomic dQ's tiles through a tensor descriptor (the driver's choice), into a
    # contiguous float32 buffer (rows of 16-byte multiples, as a descriptor takes them)
    tma = atomic and D % 4 == 0 and bool(spec("attention_dq_tma", max(bd, bdv), q.element_size()))
    dq_acc = dq
    if atomic and (q.dtype != torch.float32 or tma):
        dq_acc = _symbolic.empty((B, H, Lq, D), torch.float32, q.device)
    desc = _descriptors("bwd", max(bd, bdv), atomic, q, k, v, grad_out)
    if tma or desc:
        ensure_allocator(q.device)
    launch(
        _attn_bwd_delta_kernel,
        (cdiv(Lq, bm), B * H),
        out,
        grad_out,
        delta,
        H,
        Lq,
        DV,
        *strides(out),
        *strides(grad_out),
        dq_acc,
        D,
        *strides(dq_acc),
        ZERO_DQ=atomic,
        BLOCK_M=bm,
        BLOCK_D=bd,
        BLOCK_DV=bdv,
    )
    flags = dict(
        CAUSAL=bool(is_causal),
        HAS_MASK=attn_mask is not None,
        BOOL_MASK=bool_mask,
        UPCAST=upcast,
        PRECISION=precision,
        DESC=desc,
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
        dq_acc,
        dk_h,
        dv_h,
        mask,
        H,
        G,
        Lq,
        Lk,
        D,
        DV,
        *strides(q),
        *strides(k),
        *strides(v),
        *strides(grad_out),
        *mst,
        *strides(dq_acc),
        *strides(dk_h),
        *strides(dv_h),
        scale,
        *drop_args[:2],
        bits if kept else lse,
        *drop_args[2:],
    )
    kv_grid = (cdiv(Lk, kv_n), B * (H // G) if grouped else B * H)
    # the dK/dV kernel's scores as keys x queries, or as the forward's (the driver's choice)
    natural = bool(spec("attention_kv_natural", max(bd, bdv), q.element_size(), draws))
    launch(_attn_bwd_kernel, kv_grid, *common, FOR_DQ=False, GROUPED=grouped, DQ_ATOMIC=atomic,
           DQ_TMA=tma, NATURAL=natural, DROPOUT=kv_mode, HEAVY_FIRST=False, **flags,
           BLOCK_M=kv_m, BLOCK_N=kv_n, **kv_opts)  # fmt: skip
    if not atomic:
        launch(_attn_bwd_kernel, (cdiv(Lq, q_m), B * H), *common, FOR_DQ=True, GROUPED=False,
               DQ_ATOMIC=False, DQ_TMA=False, NATURAL=False, DROPOUT=q_mode,
               HEAVY_FIRST=_heavy_first("dq", is_causal), **flags, BLOCK_M=q_m, BLOCK_N=q_n,
               **q_opts)  # fmt: skip
    elif dq_acc is not dq:
        copy_kernel((dq,), (dq_acc,))
    if separate:
        from .reduction import SUM, reduce_into

        reduce_into(_symbolic.view(dk_h, (B, H // G, G, Lk, D)), [2], dk, SUM)
        reduce_into(_symbolic.view(dv_h, (B, H // G, G, Lk, DV)), [2], dv, SUM)
    return dq, dk, dv


# aten::_scaled_dot_product_fused_attention_overrideable(_backward): PyTorch's
# fused-attention ops for out-of-tree backends, chosen by our _fused_sdp_choice
# (dropout included). Plain convention (3).
@kernel(shapes=True)
def sdpa_overrideable(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_bias: torch.Tensor | None,
    dropout_p: float,
    is_causal: bool,
    return_debug_mask: bool,
    scale: float | None,
) -> tuple[
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
    int,
    int,
    torch.Tensor,
    torch.Tensor,
    torch.Tensor,
]:
    none = torch.empty(0, device=query.device)
    Lq, Lk = sizes(query)[2], sizes(key)[2]
    if dropout_p != 0.0:
        # one Philox counter per 8 (query, key) pairs of lengths rounded up to 16
        # (attention_common._dropout_keep), reserved 8x over (a multiple of 4); the
        # kernel writes the draw's seed and offset into two device tensors for the
        # backward, so that replays of both (launch plans) carry each call's draw
        B, H = query.shape[:2]
        count = _symbolic.plain(B * H * ((Lq + 15) // 16 * 16) * ((Lk + 15) // 16 * 16))
        seed, offset, marks = philox_draw(None, query.device, count)
        draw = [torch.empty((), dtype=torch.int64, device=query.device) for _ in range(2)]
        bits = None
        D, DV = sizes(query)[3], sizes(value)[3]
        if keeps_dropout_mask(query, Lq, Lk, D, DV):
            # the mask's bits behind the offset, in one buffer: the backward gets the
            # offset tensor, and with it the bits
            bits = _symbolic.empty(((_kept_bytes(B, H, Lq, Lk) + 7) // 8,), torch.int64,
                                   query.device)  # fmt: skip
            draw[1] = bits[0]
        out, lse = flash_attention_fwd(
            query,
            key,
            value,
            attn_bias,
            is_causal,
            scale,
            (dropout_p, seed, offset),
            marks,
            draw,
            bits,
        )
        return out, lse, none, none, Lq, Lk, draw[0], draw[1], none
    out, lse = flash_attention_fwd(query, key, value, attn_bias, is_causal, scale)
    # no draw: 0-dim seed and offset as PyTorch's meta function says (Inductor
    # checks the shapes)
    seeds = torch.empty((), dtype=torch.int64, device=query.device)
    return out, lse, none, none, Lq, Lk, seeds, seeds, none


@kernel(shapes=True, size_args=(10, 11))  # max_q, max_k: lengths it does not read
def sdpa_overrideable_backward(
    grad_out: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_bias: torch.Tensor,
    grad_input_mask: list[bool],
    out: torch.Tensor,
    logsumexp: torch.Tensor,
    cum_seq_q: torch.Tensor,
    cum_seq_k: torch.Tensor,
    max_q: int,
    max_k: int,
    dropout_p: float,
    is_causal: bool,
    philox_seed: torch.Tensor,
    philox_offset: torch.Tensor,
    scale: float | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    if grad_input_mask[3]:
        raise NotImplementedError("torch_ext: no gradient for attn_mask in the fused kernel")
    attn_bias = attn_bias if attn_bias is not None and attn_bias.numel() else None
    dropout = bits = None
    if dropout_p != 0.0:  # the forward's draw, read by the kernels from device memory
        seed, offset = (t.to(query.device, torch.int64) for t in (philox_seed, philox_offset))
        dropout = (dropout_p, seed, offset)
        B, H, Lq, D = sizes(query)
        Lk, DV = sizes(key)[2], sizes(value)[3]
        # the forward's bits, where it kept them (the same question of the same sizes),
        # behind the offset it wrote; a foreign offset tensor (too small) has none
        room = offset.untyped_storage().nbytes() - offset.storage_offset() * 8
        if keeps_dropout_mask(query, Lq, Lk, D, DV) and room >= int.__int__(
            _kept_bytes(B, H, Lq, Lk)
        ):
            bits = offset
    # The kernels read grad_out by its strides: a gradient that arrives through the
    # model's transpose of the heads (B, L, H, D memory, as q's) is read in place, as
    # PyTorch's flash backward reads it; only rows that are not contiguous are copied.
    if strides(grad_out)[-1] != 1:
        grad_out = contiguous(grad_out)
    dq, dk, dv = flash_attention_bwd(
        grad_out,
        query,
        key,
        value,
        out,
        logsumexp,
        attn_bias,
        is_causal,
        scale,
        dropout,
        bits,
    )
    return dq, dk, dv, None
