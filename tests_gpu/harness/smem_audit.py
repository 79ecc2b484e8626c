"""Shared memory of the matrix-product kernels on a Hopper GPU, without one; and that
the installed Triton compiles them (and batch norm's) at all.

Compiles the attention, matmul and implicit-GEMM convolution kernels the cuda driver
would launch (its specialisations: tiles, stages, warps) for sm_90 with Triton's own
compiler (`kernel.warmup` on a compile-only Triton driver: PTX and cubin, nothing runs)
and reports each kernel's shared memory against an H100/H200's 227 KB per block, and
its registers per thread and spilled bytes (cuobjdump, `SMEM_REGISTERS=0` skips). A
kernel over the shared-memory limit cannot launch there ("out of resources"); the host
driver's interpreter would never notice. Runs on any machine with Triton (ptxas and
cuobjdump ship with it).

    python tests_gpu/harness/smem_audit.py                       # every case below
    SMEM_CASES=attention python tests_gpu/harness/smem_audit.py  # one family
    SMEM_ATTENTION=bfloat16:256,float32:128 ...                  # dtype:head pairs

Exit status 1 when a kernel is over the limit (tests/ops/test_backends.py runs a few).
"""

import os
import sys
import types

os.environ["TORCH_EXT_DRIVER"] = "cuda"  # the cuda driver's specialisations

import torch  # noqa: E402

import compile_only  # noqa: E402  (beside this file)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_pkg = types.ModuleType("torch_ext")  # the kernels without the extension (no GPU here)
_pkg.__path__ = [os.path.join(ROOT, "torch_ext")]
sys.modules["torch_ext"] = _pkg

LIMIT = 232448  # bytes of shared memory one block may use on sm_90
# registers come from the cubin, which a compile stopped at LLVM IR does not make
AUDIT_REGISTERS = (
    os.environ.get("SMEM_REGISTERS", "1") != "0" and os.environ.get("COMPILE_ONLY_STOP") != "llir"
)


compile_only.use()

from torch_ext.backends.cuda import spec as cuda_spec  # noqa: E402

cuda_spec._sm_count = lambda: 132  # an H100's multiprocessors (no device to ask)

rows = []


def recorder(case):
    def launch(kernel, grid, *args, philox=None, grid_syms=None, **kwargs):
        name = getattr(getattr(kernel, "fn", None), "__name__", str(kernel))
        compiled = kernel.warmup(*args, grid=grid, **kwargs)
        meta = compiled.metadata
        regs = compile_only.registers(compiled.asm["cubin"]) if AUDIT_REGISTERS else (0, 0)
        rows.append((case, name, meta.num_stages, meta.shared, *regs))

    return launch


def attention_cases():
    from torch_ext.ops import attention

    pairs = os.environ.get("SMEM_ATTENTION")
    if pairs:
        wanted = [(getattr(torch, p.split(":")[0]), int(p.split(":")[1])) for p in pairs.split(",")]
    else:
        wanted = [
            (dt, d)
            for dt in (torch.bfloat16, torch.float16, torch.float32)
            for d in (64, 80, 96, 128, 256)
        ]
    for atomic in (False, True):
        cuda_spec.attention_dq_atomic = lambda *a, atomic=atomic: atomic
        for dt, d in wanted:
            case = f"attention {str(dt)[6:]} head {d}{' atomic dQ' if atomic else ''}"
            attention.launch = recorder(case)
            attention.copy_kernel = lambda outs, ins: None  # a pointwise copy, not audited
            q = torch.empty(2, 4, 512, d, dtype=dt)
            out, lse = torch.empty_like(q), torch.empty(2, 4, 512)
            attention.flash_attention_fwd(q, q, q, None, True)
            attention.flash_attention_bwd(torch.empty_like(q), q, q, q, out, lse, None, True)


def _every_candidate(family, key, candidates, run, device):
    for cfg in candidates:
        run(cfg)
    return candidates[0]


def matmul_cases():
    from torch_ext.ops import matmul, matmul_tma, matmul_ws

    matmul.tuned = _every_candidate  # each tile configuration the tuner may time
    matmul.arrival_counters = lambda family, device: torch.zeros(matmul.ARRIVALS, dtype=torch.int32)
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for m, n, k in ((4096, 4096, 4096), (256, 1024, 4096)):
            for layout in ("nn", "nt", "tn"):
                case = recorder(f"mm {str(dt)[6:]} {m}x{n}x{k} {layout}")
                matmul.launch = matmul_tma.launch = matmul_ws.launch = case
                a = (
                    torch.empty(m, k, dtype=dt)
                    if layout[0] == "n"
                    else torch.empty(k, m, dtype=dt).t()
                )
                b = (
                    torch.empty(k, n, dtype=dt)
                    if layout[1] == "n"
                    else torch.empty(n, k, dtype=dt).t()
                )
                matmul.mm_out(a, b, torch.empty(m, n, dtype=dt))


def matmul_ws_cases():
    """The warp-specialised Gluon product's candidates, each orientation (bf16), and its
    tiles that split K (4 splits)."""
    from torch_ext.ops import matmul_ws

    for layout in ("nn", "nt", "tn"):
        m, n, k = 4096, 1024, 768
        a = torch.empty(m, k) if layout[0] == "n" else torch.empty(k, m).t()
        b = torch.empty(k, n) if layout[1] == "n" else torch.empty(n, k).t()
        a, b = a.bfloat16(), b.bfloat16()
        for cfg in matmul_ws.CANDIDATES:
            matmul_ws.launch = recorder(f"mm_ws bfloat16 {m}x{n}x{k} {layout} {cfg[:5]}")
            matmul_ws.mm_ws(a, b, torch.empty(m, n, dtype=torch.bfloat16), cfg)
        for tile in matmul_ws.SPLIT_TILES:  # K split: float32 partial tiles, then their sum
            cfg = (*tile, 4, matmul_ws.WS)
            matmul_ws.launch = recorder(f"mm_ws bfloat16 {m}x{n}x{k} {layout} {cfg[:6]}")
            matmul_ws.mm_ws(a, b, torch.empty(m, n, dtype=torch.bfloat16), cfg)


def conv_cases():
    from torch_ext.ops import conv_igemm, conv_igemm_bwd, conv_igemm_flat, reduction

    conv_igemm.tuned = conv_igemm_bwd.tuned = conv_igemm_flat.tuned = _every_candidate
    conv_igemm.arrival_counters = lambda family, device: torch.zeros(
        conv_igemm.ARRIVALS, dtype=torch.int32
    )
    for dt in (torch.bfloat16, torch.float32):  # ResNet-50's stem: 3 channels, 7x7
        stem = recorder(f"conv {str(dt)[6:]} 7x7 stem, every tile candidate")
        conv_igemm_flat.launch = reduction.launch = stem  # (and its slices' sum)
        x = torch.empty(32, 3, 224, 224, dtype=dt)
        w = torch.empty(64, 3, 7, 7, dtype=dt)
        conv_igemm_flat.flat_forward(
            x, w, None, [2, 2], [3, 3], [1, 1], [112, 112], torch.contiguous_format
        )
        dy = torch.empty(32, 64, 112, 112, dtype=dt)
        conv_igemm_flat.flat_weight_grad(dy, x, w.shape, [2, 2], [3, 3], [1, 1])
    for dt in (torch.bfloat16, torch.float32):
        for c in (64, 512):
            case = f"conv {str(dt)[6:]} 3x3 {c} channels, every tile candidate"
            conv_igemm.launch = conv_igemm_bwd.launch = recorder(case)
            x = torch.empty(32, c, 14, 14, dtype=dt).to(memory_format=torch.channels_last)
            w = torch.empty(c, c, 3, 3, dtype=dt)
            conv_igemm.conv_forward(x, w, None, [1, 1], [1, 1], [1, 1], 1, [14, 14])
            conv_igemm.conv_scatter(x, w, None, [1, 1], [1, 1], [1, 1], 1, [14, 14])
            conv_igemm_bwd.conv_weight_grad(x, x, w.shape, [1, 1], [1, 1], [1, 1], 1)


def batch_norm_cases():
    """Batch norm at ResNet-50's shapes, NCHW and channels_last, training forward and
    backward: Triton 3.6 failed to compile the channels_last statistics merge
    (an OptimizeThreadLocality assertion), which Triton 3.9 compiles."""
    from torch_ext.ops import batch_norm

    for fmt in (torch.contiguous_format, torch.channels_last):
        for c, hw in (
            (64, 112),
            (64, 56),
            (256, 56),
            (128, 28),
            (512, 28),
            (256, 14),
            (1024, 14),
            (2048, 7),
        ):
            batch_norm.launch = recorder(f"batch_norm bf16 32x{c}x{hw}x{hw} {str(fmt)[6:]}")
            x = torch.empty(32, c, hw, hw, dtype=torch.bfloat16).to(memory_format=fmt)
            w, rm, rv = (torch.empty(c) for _ in range(3))
            _, mean, invstd = batch_norm.bn_forward(x, w, w, rm, rv, True, 0.1, 1e-5)
            batch_norm.bn_backward(x, x, w, mean, invstd, True, 1e-5, [True, True, True], False)


def batch_norm_sync_cases():
    """SyncBatchNorm's pieces (ops/batch_norm_sync.py): a ResNet-50 map, bf16 and float32,
    NCHW and channels_last; the merges over 8 ranks."""
    from torch_ext.ops import batch_norm, batch_norm_sync as sync

    for dtype in (torch.bfloat16, torch.float32):
        for fmt in (torch.contiguous_format, torch.channels_last):
            batch_norm.launch = sync.launch = recorder(
                f"sync_bn {dtype} 32x256x14x14 {str(fmt)[6:]}"
            )
            x = torch.empty(32, 256, 14, 14, dtype=dtype).to(memory_format=fmt)
            w = torch.empty(256)
            mean, invstd = sync.batch_norm_stats(x, 1e-5)
            ranks = torch.empty(8, 256)
            sync.batch_norm_gather_stats_with_counts(
                x, ranks, ranks, w, w, 0.1, 1e-5, torch.ones(8)
            )
            sync.batch_norm_elemt(x, w, w, mean, invstd, 1e-5)
            sdy, sxm, _, _ = sync.batch_norm_backward_reduce(
                x, x, mean, invstd, w, True, True, True
            )
            counts = torch.ones(8, 1, dtype=torch.int32)
            sync.batch_norm_backward_elemt(x, x, mean, invstd, w, sdy, sxm, counts)


def rnn_cases():
    """The fused LSTM and GRU cells (ops/rnn.py) in every float dtype (float64 included:
    their sigmoid and tanh use tl.exp)."""
    from torch_ext.ops import rnn

    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        rnn.launch = recorder(f"rnn {dtype} 64x1024")
        B, H = 64, 1024
        g4, g3 = torch.empty(B, 4 * H, dtype=dtype), torch.empty(B, 3 * H, dtype=dtype)
        h = torch.empty(B, H, dtype=dtype)
        b4, b3 = torch.empty(4 * H, dtype=dtype), torch.empty(3 * H, dtype=dtype)
        hy, cy, ws = rnn.thnn_fused_lstm_cell(g4, g4, h, b4, b4)
        rnn.thnn_fused_lstm_cell_backward_impl(h, h, h, cy, ws, True)
        hy, ws = rnn.thnn_fused_gru_cell(g3, g3, h, b3, b3)
        rnn.thnn_fused_gru_cell_backward(h, ws, True)


def sampling_cases():
    """The rejection samplers (ops/random_sampling.py): gamma, Dirichlet, Poisson, binomial."""
    from torch_ext.ops import random_sampling as rs

    rs.launch = recorder("sampling float32 1M")
    x = torch.empty(1 << 20)
    rs.standard_gamma(x)
    rs.poisson(x)
    rs.binomial(x, x)


FAMILIES = {
    "attention": attention_cases,
    "matmul": matmul_cases,
    "matmul_ws": matmul_ws_cases,
    "conv": conv_cases,
    "batch_norm": batch_norm_cases,
    "batch_norm_sync": batch_norm_sync_cases,
    "rnn": rnn_cases,
    "sampling": sampling_cases,
}


def main():
    families = os.environ.get("SMEM_CASES", ",".join(FAMILIES)).split(",")
    for family in families:
        FAMILIES[family]()
    over = [r for r in rows if r[3] > LIMIT]
    worst = {}
    for case, name, stages, shared, regs, spill in rows:
        if shared >= worst.get((case, name), (0, -1))[1]:
            worst[(case, name)] = (stages, shared, regs, spill)
    for (case, name), (stages, shared, regs, spill) in worst.items():
        flag = "  OVER" if shared > LIMIT else ""
        spills = f", {spill} B spilled" if spill else ""
        print(
            f"{case:52s} {name:24s} stages {stages} {shared / 1024:6.1f} KB "
            f"{regs:3d} regs{spills}{flag}"
        )
    spilled = sum(1 for r in rows if r[5])
    print(
        f"{len(rows)} compiled, {len(over)} over {LIMIT // 1024} KB, {spilled} spilling registers",
        flush=True,
    )
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
