"""ResNet-50's channels_last 1x1 convolution forwards (batch 32, bf16) through
ops/conv_gemm.py's tuned path (the product over the pixels or the implicit GEMM,
whichever the tuner keeps), beside cuDNN: the op's time, and the configuration kept.
PROBE_SHORT=0 takes ops/matmul.py's SHORT_STEPS tiles out of the candidates (standalone:
torch's cuda tensors, no build; a fresh tuning cache each run).

    python tests_gpu/harness/pointwise_cl_probe.py
"""

import os
import tempfile

from standalone import DEV  # first: torch_ext's kernels without its extension

os.environ["TORCH_EXT_CACHE_DIR"] = tempfile.mkdtemp()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import _tune, conv_gemm, conv_igemm, matmul  # noqa: E402

LAYERS = [(512, 256, 28), (1024, 512, 14), (512, 2048, 7)]  # (in, out, map)
if os.environ.get("PROBE_SHORT") == "0":
    matmul.SKINNY = [c for c in matmul.SKINNY if c not in matmul.SHORT_STEPS]
    matmul.SHORT_STEPS = []
SMOKE = DEV == "cpu"
if SMOKE:
    LAYERS = [(16, 8, 4)]


def main():
    cl = torch.channels_last
    n = 2 if SMOKE else 32
    for cin, cout, hw in LAYERS:
        x = torch.randn(n, cin, hw, hw, device=DEV).to(torch.bfloat16).contiguous(memory_format=cl)
        w = (torch.randn(cout, cin, 1, 1, device=DEV) * 0.05).to(torch.bfloat16)
        w = w.contiguous(memory_format=cl)

        def implicit():
            return conv_igemm.conv_forward(x, w, None, [1, 1], [0, 0], [1, 1], 1, [hw, hw])

        def ours():
            return conv_gemm.cl_pointwise_forward(x, w, None, [1, 1], implicit)

        y = ours()  # tunes
        err = (y.float() - F.conv2d(x, w).float()).abs().max().item()
        t_ref = sweeps.bench(lambda: F.conv2d(x, w), SMOKE)
        t = sweeps.bench(ours, SMOKE)
        kept = dict(_tune._memory)
        print(f"fwd {cin}->{cout} k1 @{hw}: cuDNN {t_ref * 1e3:.1f} us, ours {t * 1e3:.1f} us "
              f"({t_ref / t:.2f}x), err {err:.1e}; kept {kept}", flush=True)  # fmt: skip
        _tune.forget()


main()
