"""Split K in the warp-specialised Gluon product (ops/matmul_ws.py, SPLIT > 1: each run
of K's steps stores a float32 partial tile, a second launch sums them in order) on the
products whose output tiles leave most multiprocessors idle: weight gradients, x.t() @ dY
("tn"), of GPT-2's and Llama's linear layers at 4096 tokens and of ResNet-50's
channels_last 1x1 convolutions at batch 32 (K = the pixels). Against cuBLAS and the
shipped path (the tuner's pick among its candidates), bf16.

Standalone (no build), CUDA-graph replays. A line per case: cuBLAS us, shipped us and %
of cuBLAS, then per tile the best split's us and %, and the splits' times. The cases,
split counts and the first n tiles can be chosen.

    python tests_gpu/harness/mm_ws_split.py
    MMWS_SPLIT_CASES=768x768x4096,256x512x25088 MMWS_SPLITS=1,3,16 MMWS_TILES=1 \\
        python tests_gpu/harness/mm_ws_split.py
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402

from sweeps import bench  # noqa: E402
from tune_mm import operands  # noqa: E402
from torch_ext.ops import matmul, matmul_ws  # noqa: E402

# (M, N, K): dW = dY.t() @ x, M = out features, N = in features
CASES = [
    (768, 768, 4096), (3072, 768, 4096), (768, 3072, 4096), (768, 2304, 4096),
    (3072, 1024, 4096), (1024, 2816, 4096), (5632, 1024, 4096),
    (64, 64, 100352), (256, 64, 100352), (64, 256, 100352), (128, 256, 100352),
    (512, 128, 25088), (128, 512, 25088), (256, 512, 25088), (1024, 256, 6272),
    (256, 1024, 6272), (512, 1024, 6272), (2048, 512, 1568), (512, 2048, 1568),
]  # fmt: skip
TILES = [(128, 128, 64, 4, 4), (64, 128, 64, 4, 6), (128, 64, 64, 4, 6)]
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24)


def main():
    assert DEV == "cuda", "Gluon kernels need a GPU"
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cases = os.environ.get("MMWS_SPLIT_CASES")
    cases = [tuple(int(v) for v in c.split("x")) for c in cases.split(",")] if cases else CASES
    splits = os.environ.get("MMWS_SPLITS")
    splits = tuple(int(v) for v in splits.split(",")) if splits else SPLITS
    tiles_used = TILES[: int(os.environ.get("MMWS_TILES", len(TILES)))]
    for M, N, K in cases:
        a, b = operands(M, K, N, "tn", torch.bfloat16)
        ref = a.float() @ b.float()
        c = torch.empty(M, N, device=DEV, dtype=torch.bfloat16)
        t_ref = bench(lambda: torch.mm(a, b, out=c))
        matmul._bmm(a, b, c)  # the tuner times the shipped candidates once
        t_ship = bench(lambda: matmul._bmm(a, b, c))
        line = [f"{M}x{N}x{K} tn: cuBLAS {t_ref * 1e3:.1f} us, shipped {t_ship * 1e3:.1f} "
                f"({t_ref / t_ship:.0%})"]  # fmt: skip
        for tile in tiles_used:
            tiles = -(-M // tile[0]) * -(-N // tile[1])
            steps = -(-K // tile[2])
            res = []
            for s in splits:
                if s > 1 and (tiles * s > 2 * sms or steps // s < 2):
                    continue
                cfg = (*tile, s, matmul_ws.WS)
                c.zero_()
                try:
                    matmul_ws.mm_ws(a, b, c, cfg)
                    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                    ms = bench(lambda cfg=cfg: matmul_ws.mm_ws(a, b, c, cfg))
                except Exception as e:  # noqa: BLE001
                    print(f"  {cfg}: {type(e).__name__}: {str(e)[:100]}", flush=True)
                    continue
                res.append((ms, s, err))
            if res:
                ms, s, err = min(res, key=lambda r: r[0])
                bad = [f"s{s2}:{e2:.0e}" for _, s2, e2 in res if e2 > 2e-2]
                line.append(
                    f"  {tile[:2]} best split {s}: {ms * 1e3:.1f} us ({t_ref / ms:.0%})"
                    f" [{' '.join(f's{s2}:{m2 * 1e3:.1f}' for m2, s2, _ in sorted(res, key=lambda r: r[1]))}]"
                    + (f" WRONG {bad}" if bad else "")
                )  # fmt: skip
        print("\n".join(line), flush=True)


if __name__ == "__main__":
    main()
