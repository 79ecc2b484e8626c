"""Tiling sweep for torch_ext's reduction kernel on a GPU, against torch.

Runs the kernels of torch_ext.ops.reduction on torch.cuda tensors (no
torch_ext._C needed, as tests/ops does with TORCH_EXT_TEST_DEVICE=cuda) and
prints, per shape, the time of each (splits, BLOCK_O, BLOCK_R, num_warps)
against torch's. Used to choose the cuda tuning in backends/cuda/spec.py.

    python tests_gpu/harness/tune_reduce.py
"""

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from torch_ext.ops import _common as common  # noqa: E402
from torch_ext.ops import reduction as red  # noqa: E402
from torch_ext.ops._launch import cdiv  # noqa: E402


def run(x, O, R, out, splits, bo, br, warps):
    acc = torch.float32
    if splits > 1:
        r_split = cdiv(cdiv(R, splits), br) * br
        splits = cdiv(R, r_split)
        partial = torch.empty((O, splits), dtype=acc, device=x.device)
        red._reduce_kernel[(cdiv(O, bo), splits)](
            x,
            partial,
            x,
            O,
            R,
            1,
            r_split,
            0,
            1.0,
            1.0,
            OP=red.SUM,
            POST=red.POST_NONE,
            ACC=common.TL_DTYPES[acc],
            PARTIAL=True,
            BLOCK_O=bo,
            BLOCK_R=br,
            num_warps=warps,
        )
        fb, fr = common.reduce_blocks(O, splits, 1)
        red._reduce_kernel[(cdiv(O, fb), 1)](
            partial,
            out,
            x,
            O,
            splits,
            1,
            splits,
            0,
            1.0,
            1.0,
            OP=red.SUM,
            POST=red.POST_NONE,
            ACC=common.TL_DTYPES[acc],
            PARTIAL=False,
            BLOCK_O=fb,
            BLOCK_R=fr,
        )
    else:
        red._reduce_kernel[(cdiv(O, bo), 1)](
            x,
            out,
            x,
            O,
            R,
            1,
            R,
            0,
            1.0,
            1.0,
            OP=red.SUM,
            POST=red.POST_NONE,
            ACC=common.TL_DTYPES[acc],
            PARTIAL=False,
            BLOCK_O=bo,
            BLOCK_R=br,
            num_warps=warps,
        )


def sweep(name, x, O, R, configs):
    ref = x.view(O, R).float().sum(1)
    bench = do_bench if DEV == "cuda" else (lambda f, **k: (f(), 1.0)[1])
    t_torch = bench(lambda: x.view(O, R).sum(1), warmup=10, rep=100)
    print(f"== {name}: torch {t_torch * 1e3:.1f} us", flush=True)
    rows = []
    for cfg in configs:
        out = torch.empty(O, dtype=torch.float32, device=x.device)
        try:
            run(x, O, R, out, *cfg)
            ok = torch.allclose(out, ref, rtol=1e-3, atol=1e-2 * R**0.5)
            t = bench(lambda: run(x, O, R, out, *cfg), warmup=10, rep=100)
        except Exception as e:  # noqa: BLE001
            print(f"  {cfg}: {type(e).__name__}: {str(e)[:80]}")
            continue
        rows.append((t, cfg, ok))
    for t, cfg, ok in sorted(rows)[:8]:
        print(
            f"  splits,bo,br,warps={cfg}: {t * 1e3:.1f} us  vs torch {t_torch / t:.2f}x"
            f"{'' if ok else '  WRONG'}",
            flush=True,
        )


def main():
    sms = torch.cuda.get_device_properties(0).multi_processor_count if DEV == "cuda" else 2
    k = 1 if DEV == "cuda" else 256  # shrink for the dry run
    n = (64 << 20) // k
    x = torch.randn(n, device=DEV)
    cfgs = [
        (s, 1, br, w)
        for s in (2 * sms, 4 * sms, 8 * sms, 1024)
        for br in (4096, 8192, 16384)
        for w in (4, 8)
        if (DEV == "cuda" or w == 4) and br // (32 * w) <= 128
    ]
    sweep("sum 64M float32", x, 1, n, cfgs)
    xh = torch.randn(8192 // k, 8192, device=DEV, dtype=torch.float16)
    cfgs = [
        (1, bo, br, w)
        for bo in (1, 2)
        for br in (4096, 8192)
        for w in (4, 8, 16)
        if bo * br <= 16384
    ]
    sweep("row sum 8192x8192 float16", xh.view(-1), 8192 // k, 8192, cfgs)
    xh = torch.randn(4096 // k, 32768, device=DEV)
    sweep("row sum 4096x32768 float32", xh.view(-1), 4096 // k, 32768, cfgs)


if __name__ == "__main__":
    main()
