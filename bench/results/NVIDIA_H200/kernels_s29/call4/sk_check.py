"""The stream-K kernel (ops/matmul_sk.py) on a GPU: for each shape and layout, each of its
candidate tiles and programs a multiprocessor, with and without the flattened tile loop,
its error against cuBLAS, whether the split_k arrival counters are all zero after it,
and its us (CUDA-graph replays), beside cuBLAS and the pointer kernel's fastest tile.

    python tests_gpu/harness/sk_check.py
    SK_CASES=6272x1024x512 python tests_gpu/harness/sk_check.py
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402

from torch_ext.backends.cuda import spec as cuda_spec  # noqa: E402
from torch_ext.ops import matmul_sk  # noqa: E402
from torch_ext.ops._launch import arrival_counters  # noqa: E402
from tune_mm import bench, operands, run  # noqa: E402

CASES = os.environ.get("SK_CASES", "6272x1024x512,1568x2048x512,4096x768x768,25088x512x256")
POINTER = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3), (128, 128, 32, 4, 4), (64, 128, 64, 4, 4)]
SMOKE = DEV == "cpu"


def main():
    dtype = torch.bfloat16
    if SMOKE:
        cuda_spec._sm_count = lambda: 2
    for shape in CASES.split(","):
        M, K, N = map(int, shape.split("x"))
        for layout in ("nn", "nt", "tn"):
            a, b = operands(M, K, N, layout, dtype)
            c = torch.empty(M, N, device=DEV, dtype=dtype)
            ref = torch.mm(a, b).float()
            t_ref = bench(lambda: torch.mm(a, b, out=c))
            ptr = min((bench(lambda cfg=cfg: run(a, b, c, cfg)), cfg) for cfg in POINTER)
            print(f"{shape} {layout}: cuBLAS {t_ref * 1e3:.1f} us; pointer best {ptr[1]} "
                  f"{ptr[0] * 1e3:.1f} us", flush=True)  # fmt: skip
            for tile in matmul_sk.TILES:
                for occ in cuda_spec.mm_stream_k_occupancy(*tile):
                    for flat in (False, True):
                        matmul_sk.FLATTEN = flat
                        cfg = (*tile, matmul_sk.SK, occ)
                        try:
                            c.zero_()
                            run(a, b, c, cfg)
                            err = (c.float() - ref).abs().max().item()
                            dirty = int(arrival_counters("split_k", c.device).ne(0).sum())
                            ms = bench(lambda cfg=cfg: run(a, b, c, cfg))
                        except Exception as e:  # noqa: BLE001
                            print(f"  {cfg} flat={flat}: {type(e).__name__}: {str(e)[:100]}")
                            continue
                        print(f"  {cfg} flat={flat}: {ms * 1e3:.1f} us ({t_ref / ms:.0%} of "
                              f"cuBLAS); max err {err:.2e}; counters left {dirty}",
                              flush=True)  # fmt: skip
            matmul_sk.FLATTEN = False
            # the pointer kernel's split-K after: are its counters' users still right?
            run(a, b, c, (128, 128, 64, 4, 4, 2))
            err = (c.float() - ref).abs().max().item()
            print(f"  pointer split 2 after: max err {err:.2e}", flush=True)


if __name__ == "__main__":
    main()
