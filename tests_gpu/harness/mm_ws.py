"""The warp-specialised Gluon product (ops/matmul_ws.py) against cuBLAS and the shipped
kernels (ops/matmul.py's pointer kernel, ops/matmul_tma.py's persistent TMA kernel) on
the same operands, in the three layouts ("nn", "nt", "tn": see tune_mm.py), bf16.

Standalone (no build): torch's cuda tensors, CUDA-graph replays. A line per case: cuBLAS
us, the best of the shipped kernels' candidates here, each warp-specialised tile, with
% of cuBLAS; a wrong result prints `WRONG`. Needs a Hopper GPU (Gluon's wgmma).

    python tests_gpu/harness/mm_ws.py
    MMWS_CASES=6272x1024x512 MMWS_TILES=128x256x64x8x3 python tests_gpu/harness/mm_ws.py
"""

import itertools
import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402

from sweeps import bench  # noqa: E402
from tune_mm import operands, run  # noqa: E402
from torch_ext.ops import matmul_tma, matmul_ws  # noqa: E402

# M x K x N: ResNet-50's channels_last 1x1 layers at batch 32 (session 28's list), and
# transformer products at 4096 tokens
CASES = [
    (6272, 1024, 512), (25088, 512, 256), (1568, 512, 2048), (6272, 1024, 256),
    (25088, 128, 512), (1568, 2048, 512), (4096, 4096, 4096), (4096, 3072, 768),
    (4096, 1024, 5632), (4096, 768, 2304),
]  # fmt: skip
SHIPPED = [(128, 256, 64, 8, 3), (128, 128, 32, 4, 4), (128, 128, 64, 4, 4),
           (128, 256, 64, 8, 3, matmul_tma.TMA)]  # fmt: skip
TILES = [c[:5] for c in matmul_ws.CANDIDATES] + [(128, 128, 64, 8, 4)]


def parse(env, default):
    got = os.environ.get(env)
    if not got:
        return default
    return [tuple(int(v) for v in s.split("x")) for s in got.split(",")]


def main():
    assert DEV == "cuda", "Gluon kernels need a GPU"
    for (M, K, N), layout in itertools.product(parse("MMWS_CASES", CASES), ("nn", "nt", "tn")):
        a, b = operands(M, K, N, layout, torch.bfloat16)
        ref = a.float() @ b.float()
        c = torch.empty(M, N, device=DEV, dtype=torch.bfloat16)
        t_ref = bench(lambda: torch.mm(a, b, out=c))
        best = None
        for cfg in SHIPPED:
            try:
                ms = bench(lambda cfg=cfg: run(a, b, c, cfg))
            except Exception as e:  # noqa: BLE001
                print(f"  shipped {cfg}: {type(e).__name__}: {str(e)[:80]}", flush=True)
                continue
            best = min(best or (ms, cfg), (ms, cfg))
        line = [f"{M}x{K}x{N} {layout}: cuBLAS {t_ref * 1e3:.1f} us"]
        if best:
            line.append(f"shipped {best[0] * 1e3:.1f} ({t_ref / best[0]:.0%}) {best[1]}")
        for cfg in parse("MMWS_TILES", TILES):
            try:
                err = 0.0
                for _ in range(3):  # a race shows as a wrong result some of the times
                    c.zero_()
                    matmul_ws.mm_ws(a, b, c, (*cfg, matmul_ws.WS))
                    e = (c.float() - ref).abs().max().item() / ref.abs().max().item()
                    err = max(err, e) if e == e else float("nan")
                ms = bench(lambda cfg=cfg: matmul_ws.mm_ws(a, b, c, (*cfg, matmul_ws.WS)))
            except Exception as e:  # noqa: BLE001
                line.append(f"ws {cfg}: {type(e).__name__}: {str(e)[:60]}")
                continue
            bad = ""
            if not err <= 2e-2:  # where: how many elements, the first one's (row, col)
                off = ((c.float() - ref).abs() > 2e-2 * ref.abs().max()).nonzero()
                bad = f" WRONG {err:.1e}: {len(off)} off, first {off[0].tolist() if len(off) else None}"
            name = "x".join(map(str, cfg))
            line.append(f"ws {name} {ms * 1e3:.1f} ({t_ref / ms:.0%}){bad}")
        print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
