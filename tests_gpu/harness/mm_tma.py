"""Would Hopper's TMA (device-side tensor descriptors, Triton's tl.make_tensor_descriptor)
lift the matrix products of issue 15 past 90% of cuBLAS? Times, on torch's cuda tensors
(standalone: no build), cuBLAS, torch_ext's shipped `_mm_kernel` (every tuning
candidate, the best kept) and a TMA kernel, one program a tile or persistent (a program
a multiprocessor walking tiles, optionally Triton's warp specialisation), at mm 4096^3
(B row-major and transposed, as a Linear's forward) and bmm 16 x 2048^3, bf16 and fp16.
A line per variant: us, TFLOP/s, % of cuBLAS, max error against cuBLAS.

    python tests_gpu/harness/mm_tma.py
"""

import itertools

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from torch_ext.ops import matmul  # noqa: E402


@triton.jit
def _mm_tma_kernel(
    a, b, c, BATCH, M, N, K,
    B_T: tl.constexpr, GROUP_M: tl.constexpr, PROGS: tl.constexpr, WS: tl.constexpr,
    FLAT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    a_d = tl.make_tensor_descriptor(
        a, shape=[BATCH, M, K], strides=[M * K, K, 1], block_shape=[1, BLOCK_M, BLOCK_K]
    )
    if B_T:  # b is N x K row-major (a Linear's weight), used transposed
        b_d = tl.make_tensor_descriptor(
            b, shape=[BATCH, N, K], strides=[N * K, K, 1], block_shape=[1, BLOCK_N, BLOCK_K]
        )
    else:
        b_d = tl.make_tensor_descriptor(
            b, shape=[BATCH, K, N], strides=[K * N, N, 1], block_shape=[1, BLOCK_K, BLOCK_N]
        )
    c_d = tl.make_tensor_descriptor(
        c, shape=[BATCH, M, N], strides=[M * N, N, 1], block_shape=[1, BLOCK_M, BLOCK_N]
    )
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per = tiles_m * tiles_n
    tiles = per * BATCH
    for t in tl.range(tl.program_id(0), tiles, PROGS, flatten=FLAT, warp_specialize=WS):
        batch = t // per
        pid_m, pid_n = matmul.grouped(t % per, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k in range(0, K, BLOCK_K):
            at = a_d.load([batch, pid_m * BLOCK_M, k]).reshape(BLOCK_M, BLOCK_K)
            if B_T:
                bt = b_d.load([batch, pid_n * BLOCK_N, k]).reshape(BLOCK_N, BLOCK_K).T
            else:
                bt = b_d.load([batch, k, pid_n * BLOCK_N]).reshape(BLOCK_K, BLOCK_N)
            acc = tl.dot(at, bt, acc)
        c_d.store(
            [batch, pid_m * BLOCK_M, pid_n * BLOCK_N],
            acc.to(c.dtype.element_ty).reshape(1, BLOCK_M, BLOCK_N),
        )


def _alloc(size, align, stream):
    return torch.empty(size, dtype=torch.int8, device=DEV)


triton.set_allocator(_alloc)
SMS = torch.cuda.get_device_properties(0).multi_processor_count if DEV == "cuda" else 4


def tma(a, b, c, cfg, b_t):
    bm, bn, bk, warps, stages, persist, ws, flat = cfg
    batch, M, K = a.shape
    N = c.shape[2]
    tiles = batch * triton.cdiv(M, bm) * triton.cdiv(N, bn)
    progs = min(SMS, tiles) if persist else tiles
    _mm_tma_kernel[(progs,)](
        a, b, c, batch, M, N, K, B_T=b_t, GROUP_M=8, PROGS=progs, WS=ws, FLAT=flat,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps, num_stages=stages,
    )  # fmt: skip


def bench(fn):
    if DEV != "cuda":
        fn()
        return 1.0
    return do_bench(fn, warmup=20, rep=150)


CASES = [  # (label, batch, M, K, N, B transposed)
    ("mm 4096^3", 1, 4096, 4096, 4096, False),
    ("mm 4096^3 B^T", 1, 4096, 4096, 4096, True),
    ("bmm 16x2048^3", 16, 2048, 2048, 2048, False),
]
TILES = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4),
         (128, 128, 64, 4, 4)]  # fmt: skip
if DEV != "cuda":  # an interpreter dry run
    CASES = [("mm dry", 1, 64, 64, 64, False), ("mm dry B^T", 1, 64, 64, 64, True),
             ("bmm dry", 2, 32, 64, 32, False)]  # fmt: skip
    TILES = [(32, 32, 32, 4, 2)]
MODES = [(False, False, False), (True, False, False), (True, False, True), (True, True, True)]


def main():
    for (label, batch, M, K, N, b_t), dtype in itertools.product(
        CASES, (torch.bfloat16, torch.float16)
    ):
        a = torch.randn(batch, M, K, device=DEV, dtype=dtype)
        b = torch.randn(batch, *((N, K) if b_t else (K, N)), device=DEV, dtype=dtype)
        bb = b.transpose(1, 2) if b_t else b
        ref = torch.bmm(a, bb)
        flops = 2 * batch * M * N * K
        t_ref = bench(lambda: torch.bmm(a, bb))
        print(f"{label} {dtype}: cuBLAS {t_ref * 1e3:.1f} us {flops / t_ref / 1e9:.0f} TFLOP/s",
              flush=True)  # fmt: skip
        out = torch.empty_like(ref)
        matmul._bmm(a, bb, out)  # tunes (every candidate timed once, the best kept)
        best = (bench(lambda: matmul._bmm(a, bb, out)), "tuned")
        err = float((out.float() - ref.float()).abs().max())
        line(f"shipped {best[1]}", best[0], t_ref, flops, err)
        for tile, mode in itertools.product(TILES, MODES):
            cfg = (*tile, *mode)
            out.zero_()
            try:
                t = bench(lambda cfg=cfg: tma(a, b, out, cfg, b_t))
            except Exception as e:  # noqa: BLE001
                print(f"  tma {cfg}: {type(e).__name__}: {str(e)[:90]}", flush=True)
                continue
            err = float((out.float() - ref.float()).abs().max())
            line(f"tma {cfg}", t, t_ref, flops, err)


def line(name, t, t_ref, flops, err):
    print(f"  {name:<48} {t * 1e3:8.1f} us {flops / t / 1e9:6.0f} TFLOP/s "
          f"{100 * t_ref / t:5.1f}% err {err:.2g}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
