"""Tiles 192 wide (ops/matmul_candidates.py WIDE: 128 + 64 columns, two products on one
A block) against every other candidate the matrix products' tuner times, on the
transformer suite's products at 4096 tokens (GPT-2 and the Llama config, the three
orientations: "nt" forward, "nn" input gradient, "tn" weight gradient), bf16, against
cuBLAS.

Standalone (no build), CUDA-graph replays. A line per case: cuBLAS us, then the fastest
non-wide candidate and the fastest wide one (us, % of cuBLAS, configuration), and wide
candidates that gave a wrong product, if any.

    python tests_gpu/harness/mm_wide.py
    MM_WIDE_CASES=4096x768x768:nt python tests_gpu/harness/mm_wide.py
    TUNE_DEVICE=cpu MM_WIDE_CASES=256x256x448:nt MM_WIDE_SMOKE=1 python ...  # interpreter
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402

from sweeps import bench  # noqa: E402
from tune_mm import operands, run  # noqa: E402
from torch_ext.ops import matmul  # noqa: E402
from torch_ext.ops.matmul_candidates import WIDE  # noqa: E402

TOKENS = 4096
# (in, out) features: GPT-2's (the suite's slowest products) and one of Llama's
LINEARS = [(768, 2304), (768, 768), (768, 3072), (3072, 768), (2816, 1024)]


def cases():
    """(M, K, N, layout) of each linear layer's forward, input and weight gradient."""
    env = os.environ.get("MM_WIDE_CASES")
    if env:
        out = []
        for c in env.split(","):
            dims, layout = c.split(":")
            out.append((*(int(v) for v in dims.split("x")), layout))
        return out
    out = []
    for k, n in LINEARS:
        out += [(TOKENS, k, n, "nt"), (TOKENS, n, k, "nn"), (n, TOKENS, k, "tn")]
    return out


def candidates(a, b, c):
    """The candidates ops/matmul.py's tuner is handed for c = a @ b."""
    seen = []
    real = matmul.tuned

    def capture(family, key, cands, run_, device):
        seen.extend(cands)
        return cands[0]

    matmul.tuned = capture
    try:
        matmul._bmm(a, b, c)
    finally:
        matmul.tuned = real
    return seen


def main():
    smoke = os.environ.get("MM_WIDE_SMOKE") == "1"
    if smoke:  # the interpreter's driver has no multiprocessors: an H100's count
        from torch_ext.ops import matmul_candidates as mmc

        real = mmc.spec
        mmc.spec = lambda name, *a: 132 if name == "multiprocessors" else real(name, *a)
    for M, K, N, layout in cases():
        a, b = operands(M, K, N, layout, torch.bfloat16)
        ref = a.float() @ b.float()
        c = torch.empty(M, N, device=DEV, dtype=torch.bfloat16)
        t_ref = bench(lambda: torch.mm(a, b, out=c), smoke)
        best = {False: None, True: None}
        wrong = []
        for cfg in candidates(a, b, c):
            wide = cfg[-1] == WIDE
            if smoke and not wide:
                continue
            c.zero_()
            try:
                run(a, b, c, cfg)
                err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                ms = bench(lambda cfg=cfg: run(a, b, c, cfg), smoke)
            except Exception as e:  # noqa: BLE001
                print(f"  {cfg}: {type(e).__name__}: {str(e)[:120]}", flush=True)
                continue
            if err > 2e-2:
                wrong.append((cfg, err))
            elif best[wide] is None or ms < best[wide][0]:
                best[wide] = (ms, cfg)
        line = f"{M}x{K}x{N} {layout}: cuBLAS {t_ref * 1e3:.1f} us"
        for wide, name in ((False, "other"), (True, "wide")):
            if best[wide]:
                ms, cfg = best[wide]
                line += f" | {name} {ms * 1e3:.1f} ({t_ref / ms:.0%}) {cfg}"
        if wrong:
            line += f" | WRONG {wrong}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
