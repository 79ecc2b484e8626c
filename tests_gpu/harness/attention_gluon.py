"""A prototype of the attention backward for Hopper (sm_90) in Triton's Gluon dialect,
FlashAttention-3 style: the tensor-core products run asynchronously (wgmma with explicit
waits) beside the elementwise work, the query-side tiles arrive by TMA into a ring of
shared-memory stages ahead of use. Timed against our Triton backward (ops/attention.py,
dQ in its own kernel: attention_dq.py's "separate") and torch's SDPA backward.

Scope: bf16/fp16, head dim 64 or 128 (q, k, v alike), causal (PyTorch's top-left) or
not, no dropout, no mask, no GQA, Lq == Lk == L a multiple of the tiles. Tensors
(B, H, L, D) are read through 2-d descriptors over (B*H*L, D) views: inputs not laid
out that way are copied (.contiguous()) first, counted in the Gluon time.

Design (one program per (key tile of BLOCK_N, batch*head), walking the query tiles):
- K and V of the program's keys: one TMA load each, kept in shared memory;
- Q and dO tiles (BLOCK_M rows): a ring of STAGES buffers, tile j + STAGES - 1 issued
  at the start of step j into the stage that step j - 1 used (every reader of it was
  waited for, and a CTA barrier passed, before);
- per step: sT = K Q^T and dPT = V dO^T issued async; wait(1) -> sT done, pT =
  exp2(sT * scale*log2e - lse*log2e) (masked on the causal diagonal's tiles only)
  while dPT runs; wait(0); dST = pT * (dPT - delta); dV += pT dO and dK += dST Q
  issued async with pT, dST as register operands while dST is stored to shared
  memory; dQ_tile = dS K (dS^T's buffer seen transposed) issued; wait(0); dQ_tile *
  scale added atomically into a float32 dq (zeroed by our delta kernel, which also
  computes delta = rowsum(dO * O)), then converted to q's dtype (a torch cast);
- dK (times scale) and dV stored at the end.
Gluon kernels do not run under Triton's interpreter (cuda only).

    python tests_gpu/harness/attention_gluon.py
    GL_CASES=8x32x2048x128,8x12x2048x64,2x32x8192x128   B x H x L x D (default these)
    GL_TILES=64x128w8s2,64x64w4s3   BLOCK_M x BLOCK_N, warps, stages (default per head)
    GL_CAUSAL=0                     non-causal (default causal)
    GL_DTYPE=float16                (default bfloat16)
    GL_TIMEOUT=120                  seconds a case may take before the process exits
                                    (an mbarrier phase bug hangs the GPU: the watchdog
                                    ends the process, which frees it)
    GL_COMPILE_ONLY=1               no GPU: compile every (head, dtype, causal, tile)
                                    for sm_90 and print registers, shared memory, spills
"""

import contextlib
import math
import os
import sys
import threading

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

# Triton 3.6's names, renamed by 3.9 (async_load; barrier for thread_barrier)
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier
GL_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}
LOG2E = 1.4426950408889634
# (BLOCK_M, BLOCK_N, warps, stages) tried per head dim when GL_TILES is not given
TILES = {
    64: [(64, 128, 8, 2), (64, 128, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3)],
    128: [(64, 128, 8, 2), (64, 128, 8, 3), (64, 128, 8, 4), (64, 64, 4, 2)],
}


@gluon.jit
def _issue(j, start, n_iters, row0, q_desc, g_desc, q_bufs, g_bufs, ready):
    """The TMA copies of the program's j-th query tile (Q and dO rows) into stage
    j % STAGES, completing on ready[j % STAGES]; nothing past the last tile."""
    STAGES: gl.constexpr = q_bufs.type.shape[0]
    BLOCK_M: gl.constexpr = q_bufs.type.shape[1]
    s = j % STAGES
    more = j < n_iters
    r = row0 + start + j * BLOCK_M
    mbarrier.expect(ready.index(s), 2 * q_desc.block_type.nbytes, pred=more)
    _tma_load(q_desc, [r, 0], ready.index(s), q_bufs.index(s), pred=more)
    _tma_load(g_desc, [r, 0], ready.index(s), g_bufs.index(s), pred=more)


@gluon.jit
def _step(j, start, n_iters, row0, n0, L, bh, q_desc, g_desc, q_bufs, g_bufs, ready,
          k_smem, v_smem, ds_smem, lse, delta, dq, dk, dv, scale2, scale,
          MASK: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
          HEAD_D: gl.constexpr, STAGES: gl.constexpr, S_LAYOUT: gl.constexpr,
          KV_LAYOUT: gl.constexpr, DQ_LAYOUT: gl.constexpr, DQ: gl.constexpr):  # fmt: skip
    """One query tile (the program's j-th, from `start`) against the program's keys:
    dk, dv accumulated (returned), the tile's dq share added atomically. MASK: the
    causal diagonal crosses the tile."""
    dtype: gl.constexpr = q_desc.dtype
    # Every warp is past step j - 1's final wait: no product still reads the stage
    # refilled below, nor ds_smem (each warp group waits for its own products only).
    _cta_barrier()
    _issue(j + STAGES - 1, start, n_iters, row0, q_desc, g_desc, q_bufs, g_bufs, ready)

    m0 = start + j * BLOCK_M
    cols = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, S_LAYOUT))  # the queries
    lse2 = gl.load(lse + bh * L + cols) * 1.4426950408889634
    dl = gl.load(delta + bh * L + cols)
    s = j % STAGES
    mbarrier.wait(ready.index(s), (j // STAGES) & 1)  # the n-th use of a stage: phase n % 2
    q_s = q_bufs.index(s)
    g_s = g_bufs.index(s)
    zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, S_LAYOUT)
    sT = warpgroup_mma(k_smem, q_s.permute((1, 0)), zero, use_acc=False, is_async=True)
    dpT = warpgroup_mma(v_smem, g_s.permute((1, 0)), zero, use_acc=False, is_async=True)
    sT = warpgroup_mma_wait(1, deps=(sT,))  # sT done, dPT still running
    pT = gl.exp2(sT * scale2 - lse2[None, :])
    if MASK:  # key row c sees query column r when c <= r
        rows = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, S_LAYOUT))
        pT = gl.where(rows[:, None] <= cols[None, :], pT, 0.0)
    dpT = warpgroup_mma_wait(0, deps=(dpT,))
    dsT = pT * (dpT - dl[None, :])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=KV_LAYOUT, k_width=2)
    p_op = gl.convert_layout(pT.to(dtype), op_layout)
    ds16 = dsT.to(dtype)
    ds_op = gl.convert_layout(ds16, op_layout)
    dv = warpgroup_mma(p_op, g_s, dv, is_async=True)
    dk = warpgroup_mma(ds_op, q_s, dk, is_async=True)
    if not DQ:  # dQ by another kernel
        dv, dk, p_op, ds_op = warpgroup_mma_wait(0, deps=(dv, dk, p_op, ds_op))
        return dk, dv
    ds_smem.store(ds16)  # while dV, dK run: dS^T for dQ = dS K, read transposed
    fence_async_shared()
    _cta_barrier()  # both warp groups' rows of dS^T written before either reads them
    dq_t = gl.zeros([BLOCK_M, HEAD_D], gl.float32, DQ_LAYOUT)
    dq_t = warpgroup_mma(ds_smem.permute((1, 0)), k_smem, dq_t, use_acc=False, is_async=True)
    dq_t, dv, dk, p_op, ds_op = warpgroup_mma_wait(0, deps=(dq_t, dv, dk, p_op, ds_op))
    rq = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, DQ_LAYOUT))
    cd = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, DQ_LAYOUT))
    ptrs = dq + (row0 + rq).to(gl.int64)[:, None] * HEAD_D + cd[None, :]
    gl.atomic_add(ptrs, dq_t * scale, sem="relaxed")
    return dk, dv


@gluon.jit
def _attn_bwd_dkdv(q_desc, k_desc, v_desc, g_desc, lse, delta, dq, dk, dv, L, scale2, scale,
                   CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                   HEAD_D: gl.constexpr, STAGES: gl.constexpr, DS_LAYOUT: gl.constexpr,
                   S_LAYOUT: gl.constexpr, KV_LAYOUT: gl.constexpr,
                   DQ_LAYOUT: gl.constexpr, DQ: gl.constexpr = True):  # fmt: skip
    # grid (L // BLOCK_N, B * H): key tile first, so that under causal masking the
    # programs with the most query tiles (the first keys') start first
    pid_n = gl.program_id(0)
    bh = gl.program_id(1)
    n0 = pid_n * BLOCK_N
    row0 = bh * L  # the head's first row in the (B*H*L, D) views
    dtype: gl.constexpr = q_desc.dtype
    k_smem = gl.allocate_shared_memory(dtype, [BLOCK_N, HEAD_D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [BLOCK_N, HEAD_D], v_desc.layout)
    q_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, HEAD_D], q_desc.layout)
    g_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, HEAD_D], g_desc.layout)
    ds_smem = gl.allocate_shared_memory(dtype, [BLOCK_N, BLOCK_M], DS_LAYOUT)
    kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(kv_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)

    # query tiles [start, L): the first n_masked cross the causal diagonal
    if CAUSAL:
        start = (n0 // BLOCK_M) * BLOCK_M
        n_iters = gl.cdiv(L - start, BLOCK_M)
        n_masked = gl.minimum(gl.cdiv(n0 + BLOCK_N - start, BLOCK_M), n_iters)
    else:
        start = n0 * 0
        n_iters = gl.cdiv(L, BLOCK_M)
        n_masked = n_iters * 0

    mbarrier.expect(kv_bar, 2 * k_desc.block_type.nbytes)
    _tma_load(k_desc, [row0 + n0, 0], kv_bar, k_smem)
    _tma_load(v_desc, [row0 + n0, 0], kv_bar, v_smem)
    for j in gl.static_range(STAGES - 1):  # the ring's first tiles
        _issue(j, start, n_iters, row0, q_desc, g_desc, q_bufs, g_bufs, ready)
    mbarrier.wait(kv_bar, 0)

    dk_acc = gl.zeros([BLOCK_N, HEAD_D], gl.float32, KV_LAYOUT)
    dv_acc = gl.zeros([BLOCK_N, HEAD_D], gl.float32, KV_LAYOUT)
    for j in range(0, n_masked):
        dk_acc, dv_acc = _step(
            j, start, n_iters, row0, n0, L, bh, q_desc, g_desc, q_bufs, g_bufs, ready, k_smem,
            v_smem, ds_smem, lse, delta, dq, dk_acc, dv_acc, scale2, scale, True, BLOCK_M,
            BLOCK_N, HEAD_D, STAGES, S_LAYOUT, KV_LAYOUT, DQ_LAYOUT, DQ,
        )  # fmt: skip
    for j in range(n_masked, n_iters):
        dk_acc, dv_acc = _step(
            j, start, n_iters, row0, n0, L, bh, q_desc, g_desc, q_bufs, g_bufs, ready, k_smem,
            v_smem, ds_smem, lse, delta, dq, dk_acc, dv_acc, scale2, scale, False, BLOCK_M,
            BLOCK_N, HEAD_D, STAGES, S_LAYOUT, KV_LAYOUT, DQ_LAYOUT, DQ,
        )  # fmt: skip
    mbarrier.invalidate(kv_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))

    rk = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, KV_LAYOUT))
    cd = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, KV_LAYOUT))
    offs = (row0 + rk).to(gl.int64)[:, None] * HEAD_D + cd[None, :]
    gl.store(dk + offs, (dk_acc * scale).to(dtype))
    gl.store(dv + offs, dv_acc.to(dtype))


def _warps_per_cta(rows, warps):
    """wgmma's warps over a (rows, cols) tile: 4 along rows (16 rows each), doubled
    along rows while the tile has rows for them, else along columns (05-wgmma.py)."""
    w = [4, 1]
    while w[0] * w[1] != warps:
        if rows > 16 * w[0]:
            w[0] *= 2
        else:
            w[1] *= 2
    return w


def _mma_layout(rows, cols, warps):
    w = _warps_per_cta(rows, warps)
    n = min(256, cols // w[1])
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=w, instr_shape=[16, n, 16])


def _layouts(dt, bm, bn, d, warps):
    shared = gl.NVMMASharedLayout.get_default_for
    if _warps_per_cta(bn, warps)[1] != 1:
        raise ValueError(f"BLOCK_N {bn} too small for {warps} warps (register operands)")
    return dict(
        DS_LAYOUT=shared([bn, bm], dt),
        S_LAYOUT=_mma_layout(bn, bm, warps),
        KV_LAYOUT=_mma_layout(bn, d, warps),
        DQ_LAYOUT=_mma_layout(bm, d, warps),
    ), (shared([bm, d], dt), shared([bn, d], dt))


def _check(what, q, k, v, bm, bn):
    """NotImplementedError unless the prototypes take these inputs and tiles."""
    L, D = q.shape[2:]
    if q.dtype not in GL_DTYPES or D not in (64, 128) or k.shape != q.shape or v.shape != q.shape:
        raise NotImplementedError(f"{what}: bf16/fp16, head 64/128, q, k, v alike")
    if L % bm or L % bn:
        raise NotImplementedError(f"{what}: L {L} not a multiple of {bm}, {bn}")


def _flat_desc(t, rows, layout):
    """A TMA descriptor over (B, H, L, D) `t` seen as (B*H*L, D) rows, blocks of `rows`
    (a copy first where t is not laid out (B, H, L, D))."""
    B, H, L, D = t.shape
    flat = t.contiguous().view(B * H * L, D)
    return TensorDescriptor(flat, [B * H * L, D], [D, 1], [rows, D], layout)


def _launch_args(q, k, v, do, lse, delta, dq, dk, dv, causal, scale, tiles):
    """(kernel arguments, constexprs) of the dK/dV kernel for `tiles`, writing dk, dv and
    adding into dq (float32) unless launched with DQ=False."""
    L, D = q.shape[2:]
    bm, bn, warps, stages = tiles
    _check("attention_gluon", q, k, v, bm, bn)
    consts, (q_lay, k_lay) = _layouts(GL_DTYPES[q.dtype], bm, bn, D, warps)
    args = (_flat_desc(q, bm, q_lay), _flat_desc(k, bn, k_lay), _flat_desc(v, bn, k_lay),
            _flat_desc(do, bm, q_lay), lse.contiguous(), delta, dq, dk, dv, L, scale * LOG2E,
            scale)  # fmt: skip
    consts.update(CAUSAL=bool(causal), BLOCK_M=bm, BLOCK_N=bn, HEAD_D=D, STAGES=stages)
    return args, consts


def gluon_attention_backward(q, k, v, out, do, lse, causal, scale=None, tiles=(64, 128, 8, 2)):
    """(dq, dk, dv) of softmax(q k^T * scale [causal]) v, from the forward's `out` and `lse`
    (B, H, L) float32, natural log (ops/attention.py's flash_attention_fwd)."""
    from torch_ext.ops.attention_kernels import _attn_bwd_delta_kernel

    B, H, L, D = q.shape
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    dq = torch.empty(B, H, L, D, dtype=torch.float32, device=q.device)
    dk, dv = torch.empty_like(q.contiguous()), torch.empty_like(q.contiguous())
    delta = torch.empty(B, H, L, dtype=torch.float32, device=q.device)
    args, consts = _launch_args(q, k, v, do, lse, delta, dq, dk, dv, causal, scale, tiles)
    # delta = rowsum(dO * O), and dq (float32) zeroed for the atomic adds
    _attn_bwd_delta_kernel[(triton.cdiv(L, 64), B * H)](
        out, do, delta, H, L, D, *out.stride(), *do.stride(), dq, D, *dq.stride(),
        ZERO_DQ=True, BLOCK_M=64, BLOCK_D=D, BLOCK_DV=D,
    )  # fmt: skip
    _attn_bwd_dkdv[(L // tiles[1], B * H)](*args, **consts, num_warps=tiles[2])
    return dq.to(q.dtype), dk, dv


def hybrid_backward(q, k, v, out, do, lse, causal, scale=None, tiles=(64, 128, 8, 2)):
    """Our Triton backward (ops/attention.py, dQ in its own kernel) with its dK/dV kernel
    replaced by the Gluon one without dQ (DQ=False): delta and dQ stay Triton's."""
    import attention_dq  # beside this file: the "separate" spec

    from torch_ext.ops import attention

    B, H, L, D = q.shape
    real = attention.launch

    def launch(kernel, grid, *args, **kw):
        if (
            getattr(kernel, "fn", None) is not None
            and kernel.fn.__name__ == "_attn_bwd_kernel"
            and not kw["FOR_DQ"]
        ):
            # the Triton backward's own delta, dq (unused: DQ=False), dk, dv and scale
            delta, dq, dk, dv, sc = args[5], args[6], args[7], args[8], args[-5]
            a, consts = _launch_args(q, k, v, do, lse, delta, dq, dk, dv, causal, sc, tiles)
            _attn_bwd_dkdv[(L // tiles[1], B * H)](*a, **consts, DQ=False, num_warps=tiles[2])
            return None
        return real(kernel, grid, *args, **kw)

    attention.launch = launch
    try:
        with attention_dq._spec("separate"):
            return attention.flash_attention_bwd(do, q, k, v, out, lse, None, causal, scale)
    finally:
        attention.launch = real


# ---------------------------------------------------------------------------------------
# Compile-only report (no GPU: GL_COMPILE_ONLY=1)


def compile_report(tiles, tiles_by_head, compile_case):
    """Compile a kernel for sm_90 per (head, dtype, causal, tiles) on a compile-only
    driver (`compile_case(head, dtype, causal, cfg)` returns the compiled kernel); print
    registers, shared memory (limit 227 KB), spills and whether ptxas serialized the
    wgmma products (C7514). Returns the failures."""
    import compile_only

    compile_only.use()
    failures = 0
    for d in (64, 128):
        for dtype in (torch.bfloat16, torch.float16):
            for causal in (True, False):
                for cfg in tiles or tiles_by_head[d]:
                    name = f"head {d} {str(dtype)[6:]} causal {int(causal)} {_cfg_name(cfg)}"
                    try:
                        c = compile_case(d, dtype, causal, cfg)
                        regs, spill = compile_only.registers(c.asm["cubin"])
                        over = " OVER" if c.metadata.shared > 232448 else ""
                        ser = "" if compile_only.wgmma_overlaps(c.asm["cubin"]) else " SERIALIZED"
                        print(f"{name}: {regs} regs, {spill} B spilled, "
                              f"{c.metadata.shared / 1024:.1f} KB shared{over}{ser}", flush=True)  # fmt: skip
                        failures += bool(over or spill or ser)
                    except Exception as e:  # noqa: BLE001 -- report and go on
                        failures += 1
                        print(f"{name}: FAILED {type(e).__name__}: {str(e)[:400]}", flush=True)
    return failures


def _compile_case(d, dtype, causal, cfg):
    """The dK/dV kernel compiled for one case (compile_report)."""
    q = torch.empty(1, 2, 512, d, dtype=dtype)
    f32 = torch.empty(1, 2, 512, dtype=torch.float32)
    args, consts = _launch_args(q, q, q, q, f32, f32, q.float(), q, q, causal, 0.1, cfg)
    return _attn_bwd_dkdv.warmup(*args, **consts, num_warps=cfg[2], grid=(512 // cfg[1], 2))


# ---------------------------------------------------------------------------------------
# GPU harness


def _cfg_name(cfg):
    return f"{cfg[0]}x{cfg[1]}w{cfg[2]}s{cfg[3]}"


def _parse_tiles(text):
    out = []
    for t in text.split(","):
        m, rest = t.split("x")
        n, rest = rest.split("w")
        w, s = rest.split("s")
        out.append((int(m), int(n), int(w), int(s)))
    return out


def _watchdog(seconds, what):
    """A timer that ends the process (a hung kernel never returns to Python: only the
    process's end frees the GPU). Cancel it when the case is done."""

    def fire():
        print(f"TIMEOUT after {seconds} s in {what}: exiting", flush=True)
        os._exit(124)

    t = threading.Timer(seconds, fire)
    t.daemon = True
    t.start()
    return t


def _settings(default_cases, tiles_by_head, compile_case):
    """The GL_* environment (module docstring): with GL_COMPILE_ONLY=1 the compile report
    (compile_report) and the process's exit; else (cases as (B, H, L, D), causal, dtype,
    seconds a config may take, the tiles of head d as a function of d)."""
    tiles_env = os.environ.get("GL_TILES")
    tiles = _parse_tiles(tiles_env) if tiles_env else None
    if os.environ.get("GL_COMPILE_ONLY") == "1":
        sys.exit(1 if compile_report(tiles, tiles_by_head, compile_case) else 0)
    wanted = os.environ.get("GL_CASES", default_cases)
    return (
        [tuple(map(int, c.split("x"))) for c in wanted.split(",")],
        os.environ.get("GL_CAUSAL", "1") != "0",
        getattr(torch, os.environ.get("GL_DTYPE", "bfloat16")),
        float(os.environ.get("GL_TIMEOUT", "120")),
        lambda d: tiles or tiles_by_head[d],
    )


def _each_config(case, configs, timeout, run):
    """run(name, cfg) per tile configuration (compile, check, time), each under a
    watchdog; a configuration's failure is printed and the next one tried."""
    for cfg in configs:
        name = _cfg_name(cfg)
        dog = _watchdog(timeout, f"{case}: gluon {name}")
        try:
            run(name, cfg)
        except Exception as e:  # noqa: BLE001 -- one config's failure: report, go on
            print(f"  gluon {name}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
            with contextlib.suppress(Exception):  # a device fault raises here again
                torch.cuda.synchronize()
        dog.cancel()


def _err(a, b):
    return (a.float() - b.float()).abs().max().item()


def main():
    cases, causal, dtype, timeout, configs = _settings(
        "8x32x2048x128,8x12x2048x64,2x32x8192x128", TILES, _compile_case
    )
    import torch.nn.functional as F

    import attention_dq  # beside this file: bench() and the "separate" spec
    from torch_ext.ops import attention

    for B, H, L, D in cases:
        case = f"B{B} H{H} L{L} D{D} {str(dtype)[6:]} causal {int(causal)}"
        dog = _watchdog(timeout, f"{case}: references")
        q, k, v, g = (torch.randn(B, H, L, D, device=DEV, dtype=dtype) for _ in range(4))
        out, lse = attention.flash_attention_fwd(q, k, v, None, causal)
        flops = 2.5 * 4 * B * H * L * L * D * (0.5 if causal else 1.0)  # bwd ~ 2.5x fwd
        tf = lambda ms: flops / ms / 1e9  # noqa: E731

        def triton_bwd():
            with attention_dq._spec("separate"):
                return attention.flash_attention_bwd(g, q, k, v, out, lse, None, causal)

        qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))

        def ref_fwd():
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        ref = torch.autograd.grad(ref_fwd(), (qt, kt, vt), g)
        ours = triton_bwd()
        torch.cuda.synchronize()
        t_ours = attention_dq.bench(triton_bwd)
        t_tf = attention_dq.bench(ref_fwd)
        t_tfb = attention_dq.bench(lambda: torch.autograd.grad(ref_fwd(), (qt, kt, vt), g))
        t_torch = t_tfb - t_tf
        tri_err = ", ".join(f"{n} {_err(a, b):.2e}" for n, a, b in zip("qkv", ours, ref))
        dog.cancel()
        print(
            f"{case}: triton bwd "
            f"{t_ours:.3f} ms ({tf(t_ours):.0f} TFLOP/s), torch bwd ~{t_torch:.3f} ms "
            f"({tf(t_torch):.0f} TFLOP/s); triton vs torch max|d|: {tri_err}",
            flush=True,
        )

        def run(name, cfg):
            got = gluon_attention_backward(q, k, v, out, g, lse, causal, None, cfg)
            torch.cuda.synchronize()
            e_ref = ", ".join(f"d{n} {_err(a, b):.2e}" for n, a, b in zip("qkv", got, ref))
            e_tri = ", ".join(f"d{n} {_err(a, b):.2e}" for n, a, b in zip("qkv", got, ours))
            t = attention_dq.bench(
                lambda: gluon_attention_backward(q, k, v, out, g, lse, causal, None, cfg)
            )
            print(
                f"  gluon {name}: {t:.3f} ms ({tf(t):.0f} TFLOP/s, {t_ours / t:.2f}x "
                f"triton, {t_torch / t:.2f}x torch); vs torch {e_ref}; vs triton {e_tri}",
                flush=True,
            )
            hy = hybrid_backward(q, k, v, out, g, lse, causal, None, cfg)
            torch.cuda.synchronize()
            e_hy = ", ".join(f"d{n} {_err(a, b):.2e}" for n, a, b in zip("qkv", hy, ours))
            t = attention_dq.bench(lambda: hybrid_backward(q, k, v, out, g, lse, causal, None, cfg))
            print(
                f"  hybrid (gluon dK/dV, triton dQ) {name}: {t:.3f} ms ({tf(t):.0f} "
                f"TFLOP/s, {t_ours / t:.2f}x triton, {t_torch / t:.2f}x torch); vs triton "
                f"{e_hy}",
                flush=True,
            )

        _each_config(case, configs(D), timeout, run)


if __name__ == "__main__":
    main()
