"""ResNet-50's channels_last 3x3 convolutions (forward and weight gradient, bf16, batch
32): the implicit-GEMM configuration the tuner picks and its time, beside cuDNN's, for
a profiler to look at one kernel of each (ncu's `--launch-skip`/`--launch-count`).

Standalone (no build): torch_ext's kernels on torch's cuda tensors. The first run tunes
and remembers each pick in TORCH_EXT_CACHE_DIR; a later run with PROBE_CALLS=1 launches
the picks once each, for ncu:

    python tests_gpu/harness/conv_probe.py                       # tune, time, print picks
    PROBE_CALLS=1 ncu ... python tests_gpu/harness/conv_probe.py
    PROBE_SHAPES=512x7,256x14 PROBE_DIRS=fwd,wgrad ...           # Cin=Cout x map (stride 1)
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402

from torch_ext.ops import _tune, conv_igemm, conv_igemm_bwd  # noqa: E402

SHAPES = os.environ.get("PROBE_SHAPES", "512x7,256x14,128x28,64x56")
DIRS = os.environ.get("PROBE_DIRS", "fwd,wgrad").split(",")
CALLS = int(os.environ.get("PROBE_CALLS", "0"))

picks = {}
_tuned = _tune.tuned


def _recording(family, key, cands, run, device):
    best = _tuned(family, key, cands, run, device)
    picks[(family, *key)] = (best, len(cands))
    return best


conv_igemm.tuned = conv_igemm_bwd.tuned = _recording


def cases():
    for s in SHAPES.split(","):
        c, hw = (int(v) for v in s.split("x"))
        x = torch.randn(32, c, hw, hw, device=DEV, dtype=torch.bfloat16)
        x = x.to(memory_format=torch.channels_last)
        w = torch.randn(c, c, 3, 3, device=DEV, dtype=torch.bfloat16) * 0.05
        w = w.to(memory_format=torch.channels_last)
        dy = torch.randn(32, c, hw, hw, device=DEV, dtype=torch.bfloat16)
        dy = dy.to(memory_format=torch.channels_last)
        ours = {
            "fwd": lambda x=x, w=w, hw=hw: conv_igemm.conv_forward(
                x, w, None, [1, 1], [1, 1], [1, 1], 1, [hw, hw]
            ),
            "wgrad": lambda x=x, w=w, dy=dy: conv_igemm_bwd.conv_weight_grad(
                dy, x, w.shape, [1, 1], [1, 1], [1, 1], 1, True
            ),
        }
        ref = {
            "fwd": lambda x=x, w=w: torch.nn.functional.conv2d(x, w, None, 1, 1),
            "wgrad": lambda x=x, w=w, dy=dy: torch.ops.aten.convolution_backward(
                dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False]
            )[1],
        }
        for d in DIRS:
            yield f"{c}->{c} k3 s1 @{hw} {d}", ours[d], ref[d]


def timed(fn, calls=50):
    for _ in range(3):
        fn()
    if DEV == "cpu":  # a dry run under the interpreter
        return float("nan")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    g.replay()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1000 / calls


for name, ours, ref in cases():
    if CALLS:
        for _ in range(CALLS):
            ours()
        torch.cuda.synchronize()
        continue
    got, want = ours(), ref()
    err = ((got.float() - want.float()).abs().max() / want.float().abs().max()).item()
    t_ours, t_ref = timed(ours), timed(ref)
    print(f"{name:28s} ours {t_ours:7.1f} us  cuDNN {t_ref:7.1f} us  {t_ref / t_ours:.2f}x  "
          f"err {err:.1e}", flush=True)  # fmt: skip
for k, (best, n) in picks.items():
    print(f"pick of {n}: {best}  for {k}")
