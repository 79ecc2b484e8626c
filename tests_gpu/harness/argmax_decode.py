"""argmax over a language model's logits as greedy decoding takes it (rows = batch,
columns = vocabulary), on `privateuseone` (the extension built, cuda driver) beside
torch's `cuda`: each side's events around 200 back-to-back calls, so a figure is what a
decode loop pays a call (kernel, or the host where it is the longer). Checks the indices
equal torch's.

    TORCH_EXT_DRIVER=cuda python tests_gpu/harness/argmax_decode.py
"""

import torch

import torch_ext  # noqa: F401

CALLS = 200
for rows, cols in ((1, 50257), (8, 50257), (64, 50257), (1, 128256), (32, 128256)):
    for dt in (torch.bfloat16, torch.float32):
        x = torch.randn(rows, cols, dtype=dt)
        line = [f"{rows}x{cols} {str(dt)[6:]:<9}"]
        for dev in ("privateuseone", "cuda"):
            mod = getattr(torch, dev)
            xd = x.to(dev)
            for _ in range(20):
                idx = torch.argmax(xd, -1)
            mod.synchronize()
            start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
            start.record()
            for _ in range(CALLS):
                idx = torch.argmax(xd, -1)
            end.record()
            mod.synchronize()
            us = start.elapsed_time(end) * 1e3 / CALLS
            ok = torch.equal(idx.cpu(), torch.argmax(x, -1))
            line.append(f"{dev} {us:6.1f} us ok={ok}")
        print("  ".join(line), flush=True)
