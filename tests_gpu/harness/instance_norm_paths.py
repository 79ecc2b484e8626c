"""Instance norm on privateuseone through group norm with a group per channel
(csrc/aten/InstanceNorm.cpp) against PyTorch's composite on the same device (its
decomposition: weight and bias repeated over the batch, batch norm of the (1, N*C)
view; `aten.instance_norm.default.decompose`) and, in a process of its own
(IN_SIDE=cuda: autograd over cuda tensors fails in a process that has loaded torch_ext,
README "Known limitations"), torch's on `cuda`; affine, forward and forward + backward,
each output's largest difference from the CPU's float64.

Wall time per call over many calls, the device synchronised before and after (the
host's cost included: our launches replay from launch plans).

    python tests_gpu/harness/instance_norm_paths.py              # ours and the composite
    IN_SIDE=cuda python tests_gpu/harness/instance_norm_paths.py # torch on cuda
    IN_SHAPES=8x64x128x128,16x256x32x32 IN_DTYPES=bfloat16,float32
"""

import os
import time

import torch
import torch.nn.functional as F

SIDE = os.environ.get("IN_SIDE", "privateuseone")
if SIDE != "cuda":
    import torch_ext  # noqa: F401

SHAPES = os.environ.get("IN_SHAPES", "8x64x128x128,32x128x64x64,16x256x32x32,64x512x8x8")
DTYPES = os.environ.get("IN_DTYPES", "bfloat16,float32").split(",")
CALLS = int(os.environ.get("IN_CALLS", "50"))


def sync():
    if SIDE == "cuda":
        torch.cuda.synchronize()
    else:
        torch.accelerator.synchronize()


def timed(fn):
    for _ in range(3):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(CALLS):
        fn()
    sync()
    return (time.perf_counter() - t0) / CALLS * 1e3


def ours(x, w, b):
    return F.instance_norm(x, weight=w, bias=b)


def composite(x, w, b):
    return torch.ops.aten.instance_norm.default.decompose(x, w, b, None, None, True, 0.1, 1e-5,
                                                          False)  # fmt: skip


def main():
    paths = [("cuda", ours)] if SIDE == "cuda" else [("ours", ours), ("composite", composite)]
    for dt in DTYPES:
        dtype = getattr(torch, dt)
        for shape in SHAPES.split(","):
            n, c, h, w_ = (int(v) for v in shape.split("x"))
            torch.manual_seed(0)
            x0 = torch.randn(n, c, h, w_, dtype=dtype)
            w0, b0 = torch.rand(c, dtype=dtype) + 0.5, torch.randn(c, dtype=dtype)
            g0 = torch.randn(n, c, h, w_, dtype=dtype)
            ref = ours(x0.double(), w0.double(), b0.double())
            line = []
            for name, fn in paths:
                x, w, b, g = (t.to(SIDE) for t in (x0, w0, b0, g0))
                xg, wg, bg = (t.detach().requires_grad_() for t in (x, w, b))
                err = (fn(x, w, b).cpu().double() - ref).abs().max().item()

                def step(fn=fn, xg=xg, wg=wg, bg=bg, g=g):
                    torch.autograd.grad(fn(xg, wg, bg), (xg, wg, bg), g)

                t_f = timed(lambda fn=fn, x=x, w=w, b=b: fn(x, w, b))
                t_fb = timed(step)
                line.append(f"{name} fwd {t_f * 1e3:.0f} us, fwd+bwd {t_fb * 1e3:.0f} us, "
                            f"err {err:.1e}")  # fmt: skip
            print(f"{dt} {shape}: " + "; ".join(line), flush=True)


if __name__ == "__main__":
    main()
