"""Instance norm on privateuseone through group norm with a group per channel
(csrc/aten/InstanceNorm.cpp) against PyTorch's composite on the same device (its
decomposition: weight and bias repeated over the batch, batch norm of the (1, N*C)
view; `aten.instance_norm.default.decompose`) and torch's own on `cuda`, affine,
forward and forward + backward, with the largest differences between the three.

Wall time per call over many calls, the device synchronised before and after (the
host's cost included: each path's launches are replayed from launch plans).

    python tests_gpu/harness/instance_norm_paths.py     # needs the built extension
    IN_SHAPES=8x64x128x128,16x256x32x32 IN_DTYPES=bfloat16,float32
"""

import os
import time

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401

DEV = os.environ.get("IN_DEVICE", "privateuseone")
SHAPES = os.environ.get("IN_SHAPES", "8x64x128x128,32x128x64x64,16x256x32x32,64x512x8x8")
DTYPES = os.environ.get("IN_DTYPES", "bfloat16,float32").split(",")
CALLS = int(os.environ.get("IN_CALLS", "50"))


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()
    else:
        torch.accelerator.synchronize()


def timed(fn, dev):
    for _ in range(3):
        fn()
    sync(dev)
    t0 = time.perf_counter()
    for _ in range(CALLS):
        fn()
    sync(dev)
    return (time.perf_counter() - t0) / CALLS * 1e3


def composite(x, w, b):
    return torch.ops.aten.instance_norm.default.decompose(x, w, b, None, None, True, 0.1, 1e-5,
                                                          False)  # fmt: skip


def main():
    for dt in DTYPES:
        dtype = getattr(torch, dt)
        for shape in SHAPES.split(","):
            n, c, h, w_ = (int(v) for v in shape.split("x"))
            x0 = torch.randn(n, c, h, w_, dtype=dtype)
            w0, b0 = torch.rand(c, dtype=dtype) + 0.5, torch.randn(c, dtype=dtype)
            g0 = torch.randn(n, c, h, w_, dtype=dtype)
            line, outs = [], {}
            for name, dev, fn in (
                ("ours", DEV, lambda x, w, b: F.instance_norm(x, weight=w, bias=b)),
                ("composite", DEV, composite),
                ("cuda", "cuda", lambda x, w, b: F.instance_norm(x, weight=w, bias=b)),
            ):
                x, w, b, g = (t.to(dev) for t in (x0, w0, b0, g0))
                xg, wg, bg = (t.detach().requires_grad_() for t in (x, w, b))
                outs[name] = fn(x, w, b).float().cpu()

                def step(fn=fn, xg=xg, wg=wg, bg=bg, g=g):
                    torch.autograd.grad(fn(xg, wg, bg), (xg, wg, bg), g)

                t_f = timed(lambda fn=fn, x=x, w=w, b=b: fn(x, w, b), dev)
                t_fb = timed(step, dev)
                line.append(f"{name} fwd {t_f * 1e3:.0f} us, fwd+bwd {t_fb * 1e3:.0f} us")
            d1 = (outs["ours"] - outs["composite"]).abs().max().item()
            d2 = (outs["ours"] - outs["cuda"]).abs().max().item()
            print(f"{dt} {shape}: " + "; ".join(line) + f"; |ours - composite| {d1:.1e}, "
                  f"|ours - cuda| {d2:.1e}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
