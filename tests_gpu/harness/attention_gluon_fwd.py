"""A prototype of the attention forward for Hopper (sm_90) in Triton's Gluon dialect,
FlashAttention-3 style: the tensor-core products run asynchronously (wgmma with explicit
waits) beside the softmax, the key/value tiles arrive by TMA into a ring of shared-memory
stages ahead of use. Timed against our Triton forward (ops/attention.py's
flash_attention_fwd) and torch's SDPA forward.

Scope: bf16/fp16, head dim 64 or 128 (q, k, v alike), causal (PyTorch's top-left) or
not, no dropout, no mask, no GQA, Lq == Lk == L a multiple of the tiles. Tensors
(B, H, L, D) are read through 2-d descriptors over (B*H*L, D) views: inputs not laid
out that way are copied (.contiguous()) first, counted in the Gluon time.

Design (one program per (query tile of BLOCK_M, batch*head); causal: the longest first):
- Q: one TMA load, kept in shared memory; K_t and V_t (key tile t) land in stage
  t % STAGES of two rings, each with its own mbarrier (K_t is needed before V_t);
- S_0 = Q K_0^T issued and waited for before the loop; step j, with S_j in registers
  and PV_{j-1} (O += P_{j-1} V_{j-1}) possibly still running:
    issue S_{j+1} = Q K_{j+1}^T (async);
    softmax of S_j in base 2 (scale*log2e folded, causal mask on diagonal tiles only)
      -- the exponentials run while S_{j+1} and PV_{j-1} occupy the tensor cores;
    wait(0): PV_{j-1} and S_{j+1} done (a wait(1) leaving S_{j+1} running makes ptxas
      serialize all wgmma, C7514); CTA barrier, then TMA refills: K_{j+S} into K_j's
      stage (S_j done), V_{j+S-1} into V_{j-1}'s stage (PV_{j-1} done);
    O *= alpha; issue PV_j with P_j from registers (DotOperandLayout: no shared memory),
      left running into step j + 1 (its S_{j+2} issue and softmax).
- the last key tile peeled (no S_{j+1}, waits to 0); O /= l; lse = (m + log2 l) * ln 2.
8 warps with BLOCK_M 128: two warp groups, each owning 64 query rows of the tile.
Gluon kernels do not run under Triton's interpreter (cuda only).

    python tests_gpu/harness/attention_gluon_fwd.py
    GL_CASES=8x32x2048x128,2x32x8192x128,...   B x H x L x D (default: see DEFAULT_CASES)
    GL_TILES=128x128w8s2,128x64w8s3   BLOCK_M x BLOCK_N, warps, stages (default per head)
    GL_CAUSAL=0                     non-causal (default causal)
    GL_DTYPE=float16                (default bfloat16)
    GL_TIMEOUT=120                  seconds a config may take before the process exits
                                    (an mbarrier phase bug hangs the GPU: the watchdog
                                    ends the process, which frees it)
    GL_COMPILE_ONLY=1               no GPU: compile every (head, dtype, causal, tile)
                                    for sm_90 and print registers, shared memory, spills
"""

import math

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    mbarrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from attention_gluon import (  # noqa: E402  (beside this file: shims, layouts, harness)
    GL_DTYPES,
    LOG2E,
    _check,
    _cta_barrier,
    _each_config,
    _err,
    _flat_desc,
    _mma_layout,
    _settings,
    _tma_load,
    _warps_per_cta,
    _watchdog,
)

DEFAULT_CASES = "8x32x2048x128,2x32x8192x128,8x12x2048x64,2x12x8192x64"
# (BLOCK_M, BLOCK_N, warps, stages) tried per head dim when GL_TILES is not given
TILES = {
    64: [(128, 128, 8, 2), (128, 128, 8, 3), (128, 64, 8, 3), (64, 128, 4, 3)],
    128: [(128, 128, 8, 2), (128, 128, 8, 3), (128, 64, 8, 3), (64, 128, 4, 2)],
}


@gluon.jit
def _load_kv(t, n, row0, k_desc, v_desc, k_bufs, v_bufs, k_bar, v_bar, DO_K, DO_V):
    """TMA copies of key tile t's K (DO_K) and V (DO_V) into stage t % STAGES, completing
    on k_bar / v_bar of that stage; nothing past the last tile n - 1."""
    STAGES: gl.constexpr = k_bufs.type.shape[0]
    BLOCK_N: gl.constexpr = k_bufs.type.shape[1]
    s = t % STAGES
    r = row0 + t * BLOCK_N
    pk = DO_K & (t < n)
    pv = DO_V & (t < n)
    mbarrier.expect(k_bar.index(s), k_desc.block_type.nbytes, pred=pk)
    _tma_load(k_desc, [r, 0], k_bar.index(s), k_bufs.index(s), pred=pk)
    mbarrier.expect(v_bar.index(s), v_desc.block_type.nbytes, pred=pv)
    _tma_load(v_desc, [r, 0], v_bar.index(s), v_bufs.index(s), pred=pv)


@gluon.jit
def _step(j, n, row0, m0, k_desc, v_desc, q_smem, k_bufs, v_bufs, k_bar, v_bar,
          s, o, p_prev, m_i, l_i, scale2,
          MASK: gl.constexpr, NEXT: gl.constexpr, S_LAYOUT: gl.constexpr,
          O_LAYOUT: gl.constexpr):  # fmt: skip
    """Key tile j: S_j (done, in registers) -> P_j; PV_j issued. NEXT: S_{j+1} issued
    first, PV_j left running at the end; else everything waited for. MASK: the causal
    diagonal crosses the tile."""
    STAGES: gl.constexpr = k_bufs.type.shape[0]
    BLOCK_M: gl.constexpr = q_smem.type.shape[0]
    BLOCK_N: gl.constexpr = k_bufs.type.shape[1]
    dtype: gl.constexpr = q_smem.dtype
    if NEXT:  # S_{j+1} on the tensor cores while the softmax below runs
        t = j + 1
        mbarrier.wait(k_bar.index(t % STAGES), (t // STAGES) & 1)
        zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, S_LAYOUT)
        k_t = k_bufs.index(t % STAGES).permute((1, 0))
        s_next = warpgroup_mma(q_smem, k_t, zero, use_acc=False, is_async=True)
    if MASK:  # query row r sees key c when c <= r
        rows = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, S_LAYOUT))
        cols = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, S_LAYOUT))
        s = gl.where(cols[None, :] <= rows[:, None], s, -float("inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1) * scale2)  # scale2 > 0
    p = gl.exp2(s * scale2 - m_new[:, None])
    alpha = gl.exp2(m_i - m_new)
    l_i = l_i * alpha + gl.sum(p, 1)
    p_op = gl.convert_layout(p.to(dtype), p_prev.type.layout)
    # PV_{j-1} (and S_{j+1}) done: wait(1) here, leaving S_{j+1} running, makes ptxas
    # serialize every wgmma (C7514: two groups in flight across the loop's back edge)
    o, p_prev = warpgroup_mma_wait(0, deps=(o, p_prev))
    if NEXT:  # every warp group is past S_j and PV_{j-1}: their stages may be refilled
        _cta_barrier()
        _load_kv(j + STAGES, n, row0, k_desc, v_desc, k_bufs, v_bufs, k_bar, v_bar, True, False)
        _load_kv(j + STAGES - 1, n, row0, k_desc, v_desc, k_bufs, v_bufs, k_bar, v_bar,
                 False, j >= 1)  # fmt: skip
    o = o * gl.convert_layout(alpha, gl.SliceLayout(1, O_LAYOUT))[:, None]
    mbarrier.wait(v_bar.index(j % STAGES), (j // STAGES) & 1)
    o = warpgroup_mma(p_op, v_bufs.index(j % STAGES), o, is_async=True)
    if NEXT:  # S_{j+1} (done) as a tensor; PV_j left running into step j + 1
        s_next, o, p_op = warpgroup_mma_wait(1, deps=(s_next, o, p_op))
    else:
        o, p_op = warpgroup_mma_wait(0, deps=(o, p_op))
        s_next = s
    return s_next, o, p_op, m_new, l_i


@gluon.jit
def _attn_fwd(q_desc, k_desc, v_desc, out, lse, L, scale2,
              CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
              HEAD_D: gl.constexpr, STAGES: gl.constexpr, S_LAYOUT: gl.constexpr,
              O_LAYOUT: gl.constexpr):  # fmt: skip
    # grid (L // BLOCK_M, B * H); causal: the last query tiles (the most keys) first
    pid_m = gl.num_programs(0) - 1 - gl.program_id(0) if CAUSAL else gl.program_id(0)
    bh = gl.program_id(1)
    m0 = pid_m * BLOCK_M
    row0 = bh * L  # the head's first row in the (B*H*L, D) views
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_D], q_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_D], k_desc.layout)
    v_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_D], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_bar = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_bar = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_bar.index(i), count=1)
        mbarrier.init(v_bar.index(i), count=1)

    # key tiles [0, n): [0, n_free) below the diagonal, [n_free, n) crossing it
    if CAUSAL:
        n = gl.cdiv(m0 + BLOCK_M, BLOCK_N)
        n_free = m0 // BLOCK_N
    else:
        n = L // BLOCK_N
        n_free = n - 1

    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    _tma_load(q_desc, [row0 + m0, 0], q_bar, q_smem)
    for t in gl.static_range(STAGES):  # the ring's first tiles
        _load_kv(t, n, row0, k_desc, v_desc, k_bufs, v_bufs, k_bar, v_bar, True, True)

    m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, gl.SliceLayout(1, S_LAYOUT))
    l_i = gl.zeros([BLOCK_M], gl.float32, gl.SliceLayout(1, S_LAYOUT))
    o = gl.zeros([BLOCK_M, HEAD_D], gl.float32, O_LAYOUT)
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=O_LAYOUT, k_width=2)
    p_op = gl.zeros([BLOCK_M, BLOCK_N], dtype, op_layout)
    s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, S_LAYOUT)
    mbarrier.wait(q_bar, 0)
    mbarrier.wait(k_bar.index(0), 0)
    s = warpgroup_mma(q_smem, k_bufs.index(0).permute((1, 0)), s, use_acc=False, is_async=True)
    s = warpgroup_mma_wait(0, deps=(s,))
    for j in range(0, n_free):
        s, o, p_op, m_i, l_i = _step(
            j, n, row0, m0, k_desc, v_desc, q_smem, k_bufs, v_bufs, k_bar, v_bar, s, o, p_op,
            m_i, l_i, scale2, False, True, S_LAYOUT, O_LAYOUT,
        )  # fmt: skip
    for j in range(n_free, n - 1):
        s, o, p_op, m_i, l_i = _step(
            j, n, row0, m0, k_desc, v_desc, q_smem, k_bufs, v_bufs, k_bar, v_bar, s, o, p_op,
            m_i, l_i, scale2, CAUSAL, True, S_LAYOUT, O_LAYOUT,
        )  # fmt: skip
    s, o, p_op, m_i, l_i = _step(
        n - 1, n, row0, m0, k_desc, v_desc, q_smem, k_bufs, v_bufs, k_bar, v_bar, s, o, p_op,
        m_i, l_i, scale2, CAUSAL, False, S_LAYOUT, O_LAYOUT,
    )  # fmt: skip
    mbarrier.invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_bar.index(i))
        mbarrier.invalidate(v_bar.index(i))

    o = o / gl.convert_layout(l_i, gl.SliceLayout(1, O_LAYOUT))[:, None]
    rm = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, O_LAYOUT))
    cd = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, O_LAYOUT))
    gl.store(out + (row0 + rm).to(gl.int64)[:, None] * HEAD_D + cd[None, :], o.to(dtype))
    # the log-sum-exp in natural units, as our forward (and PyTorch) store it
    rl = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, S_LAYOUT))
    gl.store(lse + row0 + rl, (m_i + gl.log2(l_i)) * 0.6931471805599453)


def _launch_args(q, k, v, causal, scale, tiles):
    """(kernel arguments, constexprs, (out, lse)) for `tiles`."""
    B, H, L, D = q.shape
    bm, bn, warps, stages = tiles
    _check("attention_gluon_fwd", q, k, v, bm, bn)
    if stages < 2 or scale <= 0:  # S_{j+1}'s keys beside S_j's; the row max taken scaled
        raise NotImplementedError("attention_gluon_fwd: stages >= 2 and scale > 0 only")
    if _warps_per_cta(bm, warps)[1] != 1:
        raise ValueError(f"BLOCK_M {bm} too small for {warps} warps (register operands)")
    dt = GL_DTYPES[q.dtype]

    def desc(t, rows):
        return _flat_desc(t, rows, gl.NVMMASharedLayout.get_default_for([rows, D], dt))

    out = torch.empty(B, H, L, D, dtype=q.dtype, device=q.device)
    lse = torch.empty(B, H, L, dtype=torch.float32, device=q.device)
    args = (desc(q, bm), desc(k, bn), desc(v, bn), out, lse, L, scale * LOG2E)
    consts = dict(CAUSAL=bool(causal), BLOCK_M=bm, BLOCK_N=bn, HEAD_D=D, STAGES=stages,
                  S_LAYOUT=_mma_layout(bm, bn, warps), O_LAYOUT=_mma_layout(bm, D, warps))  # fmt: skip
    return args, consts, (out, lse)


def gluon_attention_forward(q, k, v, causal, scale=None, tiles=(128, 128, 8, 2)):
    """(out, lse) of softmax(q k^T * scale [causal]) v; lse (B, H, L) float32, natural log
    (as ops/attention.py's flash_attention_fwd)."""
    B, H, L, D = q.shape
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    args, consts, res = _launch_args(q, k, v, causal, scale, tiles)
    _attn_fwd[(L // tiles[0], B * H)](*args, **consts, num_warps=tiles[2])
    return res


# ---------------------------------------------------------------------------------------
# Compile-only report (no GPU: GL_COMPILE_ONLY=1)


def _compile_case(d, dtype, causal, cfg):
    """The forward compiled for one case (attention_gluon.compile_report)."""
    q = torch.empty(1, 2, 512, d, dtype=dtype)
    args, consts, _ = _launch_args(q, q, q, causal, 0.1, cfg)
    return _attn_fwd.warmup(*args, **consts, num_warps=cfg[2], grid=(512 // cfg[0], 2))


# ---------------------------------------------------------------------------------------
# GPU harness


def main():
    cases, causal, dtype, timeout, configs = _settings(DEFAULT_CASES, TILES, _compile_case)
    import torch.nn.functional as F

    import attention_dq  # beside this file: bench()
    from torch_ext.ops import attention

    for B, H, L, D in cases:
        case = f"B{B} H{H} L{L} D{D} {str(dtype)[6:]} causal {int(causal)}"
        dog = _watchdog(timeout, f"{case}: references")
        q, k, v = (torch.randn(B, H, L, D, device=DEV, dtype=dtype) for _ in range(3))
        flops = 4 * B * H * L * L * D * (0.5 if causal else 1.0)
        tf = lambda ms: flops / ms / 1e9  # noqa: E731
        out, lse = attention.flash_attention_fwd(q, k, v, None, causal)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        t_ours = attention_dq.bench(lambda: attention.flash_attention_fwd(q, k, v, None, causal))
        t_torch = attention_dq.bench(
            lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        )
        dog.cancel()
        print(
            f"{case}: triton fwd {t_ours:.3f} ms ({tf(t_ours):.0f} TFLOP/s), torch fwd "
            f"{t_torch:.3f} ms ({tf(t_torch):.0f} TFLOP/s); triton vs torch max|d| out "
            f"{_err(out, ref):.2e}",
            flush=True,
        )

        def run(name, cfg):
            got, got_lse = gluon_attention_forward(q, k, v, causal, None, cfg)
            torch.cuda.synchronize()
            errs = (f"vs triton out {_err(got, out):.2e}, lse {_err(got_lse, lse):.2e}; "
                    f"vs torch out {_err(got, ref):.2e}")  # fmt: skip
            t = attention_dq.bench(lambda: gluon_attention_forward(q, k, v, causal, None, cfg))
            print(
                f"  gluon {name}: {t:.3f} ms ({tf(t):.0f} TFLOP/s, {t_ours / t:.2f}x "
                f"triton, {t_torch / t:.2f}x torch); {errs}",
                flush=True,
            )

        _each_config(case, configs(D), timeout, run)


if __name__ == "__main__":
    main()
