"""Kernel times of small matrix products by torch.profiler (each kernel's own duration,
no launch gaps), bf16, against cuBLAS:

- `fixed`: a 768 x 768 output over K = 64 to 4096, "tn" and "nn", by cuBLAS, the
  warp-specialised kernel (128 x 128 tiles), the pointer kernel (128 x 128) and the
  persistent TMA kernel (128 x 256): what a kernel costs at one step of K (its fixed
  cost) and per step after;
- `split`: the warp-specialised kernel with K split on weight gradients ("tn"), its
  product kernel and the partial tiles' sum apart.

Standalone (no build); needs a Hopper GPU (Gluon's wgmma).

    python tests_gpu/harness/mm_kernel_times.py [fixed,split]
"""

import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from tune_mm import operands, run  # noqa: E402
from torch_ext.ops import matmul_tma, matmul_ws  # noqa: E402

WHICH = set((sys.argv[1] if len(sys.argv) > 1 else "fixed,split").split(","))
WS = matmul_ws.WS


def kernel_times(fn, calls=20):
    """'name=us ...': each CUDA kernel's mean duration over `calls` calls of fn."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    times = {}
    for e in p.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
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


if __name__ == "__main__":
    main()
