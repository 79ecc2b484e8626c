"""Where a compiled training step's GPU time goes, on privateuseone and on cuda.

    python tests_gpu/harness/compile_profile.py --workload llama_train --side privateuseone
    python tests_gpu/harness/compile_profile.py --workload llama_train --side cuda

Builds the model benchmark's workload with its forward + backward under torch.compile
(bench/models/workloads.py), runs warm-up steps, times steps without a profiler, then
profiles one step through CUPTI and prints the kernels by total device time, grouped:
Inductor's generated kernels (`triton_` names), ours (the other Triton kernels on
privateuseone), and the vendor libraries' (cuBLAS, cuDNN, flash attention) on cuda.
"""

import argparse
import collections
import statistics
import time

import torch


def _group(name, side):
    if name.startswith("triton_") or name.startswith("triton_poi") or "fused" in name:
        return "inductor"
    low = name.lower()
    if any(k in low for k in ("gemm", "cutlass", "sm90_xmma", "cublas", "nvjet", "gemv")):
        return "matmul (vendor)"
    if "flash" in low or "fmha" in low or "attention" in low or "cudnn" in low:
        return "attention" + (" (vendor)" if side == "cuda" else "")
    if any(k in low for k in ("mm_kernel", "matmul", "_mm_", "linear", "addmm", "bmm")):
        return "matmul (ours)"
    if any(k in low for k in ("adam", "foreach", "multi_tensor")):
        return "optimizer"
    return "other"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", default="llama_train")
    p.add_argument("--side", default="privateuseone")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--top", type=int, default=25)
    p.add_argument(
        "--gpu-types",
        action="store_true",
        help="an experiment: Inductor's is_gpu() true for privateuseone (its GPU heuristics)",
    )
    args = p.parse_args()
    if args.gpu_types:
        from torch._inductor import utils

        utils.get_gpu_type()  # cached first: it asserts a single GPU type
        utils.GPU_TYPES.append("privateuseone")
    from bench.models.workloads import WORKLOADS

    if args.side == "privateuseone":
        import torch_ext  # noqa: F401
    device = torch.device(args.side, 0)
    mod = getattr(torch, args.side)
    run = WORKLOADS[args.workload].build(device, compile_fn=torch.compile)
    for _ in range(4):
        run.step()
    mod.synchronize()
    times = []
    for _ in range(args.steps):
        t = time.perf_counter()
        run.step()
        mod.synchronize()
        times.append(time.perf_counter() - t)
    tag = " gpu_types" if args.gpu_types else ""
    print(
        f"{args.workload} {args.side}{tag} compiled: median {statistics.median(times) * 1e3:.2f} ms"
    )
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        run.step()
        mod.synchronize()
    kernels = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        # our kernels' events come under the PrivateUse1 device type, torch's under CUDA
        if e.device_type != torch.autograd.DeviceType.CPU and e.device_time_total > 0:
            kernels[e.name][0] += 1
            kernels[e.name][1] += e.device_time_total
    groups = collections.defaultdict(lambda: [0, 0.0])
    for name, (n, us) in kernels.items():
        g = groups[_group(name, args.side)]
        g[0] += n
        g[1] += us
    total = sum(us for _, us in kernels.values())
    print(f"kernels {sum(n for n, _ in kernels.values())}, device time {total / 1e3:.2f} ms")
    for g, (n, us) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"  {g:22s} {n:5d} kernels {us / 1e3:8.3f} ms")
    for name, (n, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"  {us / 1e3:8.3f} ms {n:4d}x  {name[:110]}")


if __name__ == "__main__":
    main()
