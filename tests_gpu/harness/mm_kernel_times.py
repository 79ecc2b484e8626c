"""Kernel times of small matrix products by torch.profiler (each kernel's own duration,
no launch gaps), bf16, against cuBLAS:

- `fixed`: a 768 x 768 output over K = 64 to 4096, "tn" and "nn", by cuBLAS, the
  warp-specialised kernel (128 x 128 tiles), the pointer kernel (128 x 128) and the
  persistent TMA kernel (128 x 256): what a kernel costs at one step of K (its fixed
  cost) and per step after;
- `split`: the warp-specialised kernel with K split on weight gradients ("tn"), its
  product kernel and the partial tiles' sum apart;
- `direct`: the pointer kernel launched directly and through ops/_launch.py's launch,
  each queued behind a spin and not (the idle gap's effect on a tiny kernel's time).

Each kernel's calls are queued behind a GPU spin (kernel_times) unless said otherwise.

Standalone (no build); needs a Hopper GPU (Gluon's wgmma).

    python tests_gpu/harness/mm_kernel_times.py [fixed,split,direct]
"""

import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from tune_mm import operands, run  # noqa: E402
from torch_ext.ops import _tune, matmul, matmul_tma, matmul_ws  # noqa: E402

WHICH = set((sys.argv[1] if len(sys.argv) > 1 else "fixed,split,direct").split(","))
WS = matmul_ws.WS


def kernel_times(fn, calls=20, queued=True):
    """'name=us ...': each CUDA kernel's mean duration over `calls` calls of fn. queued:
    the calls wait behind a GPU spin (ops/_tune.py `_hold_stream`) long enough for all
    of them to be queued, so the kernels run back to back; otherwise each starts when
    the host gets to it, after an idle gap (a tiny kernel then measured 1.1 us longer
    through ops/_launch.py's launch than launched directly, the same compiled kernel:
    session 34, call 13)."""
    import time

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    host_ns = (time.perf_counter() - t0) * 1e9
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        if queued:
            _tune._hold_stream(torch.device(DEV), host_ns * calls)
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    times = {}
    for e in p.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and "_spin" not in e.name:
            times.setdefault(e.name[:24], []).append(e.device_time_total)
    return " ".join(f"{k}={sum(v) / len(v):.1f}" for k, v in times.items())


def main():
    assert DEV == "cuda", "Gluon kernels need a GPU"
    if "fixed" in WHICH:
        M = N = 768
        for K in (64, 256, 1024, 4096):
            for layout in ("tn", "nn"):
                a, b = operands(M, K, N, layout, torch.bfloat16)
                c = torch.empty(M, N, device=DEV, dtype=torch.bfloat16)
                print(
                    f"{M}x{N}x{K} {layout} | cuBLAS {kernel_times(lambda: torch.mm(a, b, out=c))}"
                    f" | ws {kernel_times(lambda: matmul_ws.mm_ws(a, b, c, (128, 128, 64, 4, 4, WS)))}"
                    f" | pointer {kernel_times(lambda: run(a, b, c, (128, 128, 64, 4, 4)))}"
                    f" | tma {kernel_times(lambda: run(a, b, c, (128, 256, 64, 8, 3, matmul_tma.TMA)))}",
                    flush=True,
                )  # fmt: skip
    if "split" in WHICH:
        cases = {
            (768, 768, 4096): [(128, 128, 64, 4, 4, 3), (128, 128, 64, 4, 4, 1), (64, 128, 64, 4, 6, 1)],
            (256, 512, 25088): [(128, 128, 64, 4, 4, 16), (64, 128, 64, 4, 6, 8)],
            (512, 128, 25088): [(128, 128, 64, 4, 4, 33), (64, 128, 64, 4, 6, 16)],
        }  # fmt: skip
        for (M, N, K), cfgs in cases.items():
            a, b = operands(M, K, N, "tn", torch.bfloat16)
            c = torch.empty(M, N, device=DEV, dtype=torch.bfloat16)
            for cfg in cfgs:
                times = kernel_times(lambda cfg=cfg: matmul_ws.mm_ws(a, b, c, (*cfg, WS)))
                print(f"{M}x{N}x{K} tn {cfg}: {times}", flush=True)

    if "direct" in WHICH:
        import triton.language as tl

        M = N = 768
        for K in (64, 512):
            a, b = operands(M, K, N, "nn", torch.bfloat16)
            c = torch.empty(M, N, device=DEV, dtype=torch.bfloat16)

            def direct():
                matmul._mm_kernel[(36, 1)](
                    a, b, c, c, c, c, M, N, K, 0, K, 1, 0, N, 1, 0, N, 1, 0, N, 1, 1.0, 0.0, 0,
                    HAS_BIAS=False, ACC=tl.float32, PRECISION=None, UPCAST=False, EVEN_K=True,
                    GROUP_M=8, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, SPLIT=1, num_warps=4,
                    num_stages=4,
                )  # fmt: skip

            def through_launch():  # K < 1024: no split (mm_split_k), the same kernel
                run(a, b, c, (128, 128, 64, 4, 4))

            for queued in (True, False):
                print(
                    f"{M}x{N}x{K} nn queued={queued}: direct "
                    f"{kernel_times(direct, queued=queued)} | launch "
                    f"{kernel_times(through_launch, queued=queued)} | cuBLAS "
                    f"{kernel_times(lambda: torch.mm(a, b, out=c), queued=queued)}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
