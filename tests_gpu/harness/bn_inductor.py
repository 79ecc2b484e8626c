"""torch.compile's batch norm (Inductor's Triton kernels) on ResNet-50's shapes beside a
same-size copy and cuDNN's, training forward and forward + backward, so that our
kernels (bn_paths.py) have a Triton reference on the same machine. With
TORCH_LOGS=output_code the generated kernels are printed (read their tiling).

Timing as bn_paths.py: calls queued behind a GPU spin, event-timed, median of 5.

    BN_SHAPES=512x14,64x112 BN_LAYOUTS=channels_last python tests_gpu/harness/bn_inductor.py
"""

import os

import torch
import torch.nn.functional as F

from bn_paths import cases, timed

torch._dynamo.config.cache_size_limit = 64


def fwd(x, w, b, rm, rv):
    return F.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5)


def main():
    cfwd = torch.compile(fwd, dynamic=False)
    for layout, c, hw, ops in cases():
        x, dy, wt, bs, rm, rv = ops[:6]
        same = torch.empty_like(x)
        t_c = timed(lambda: same.copy_(dy))
        xg = x.detach().clone().requires_grad_(True)
        wg = wt.detach().clone().requires_grad_(True)
        bg = bs.detach().clone().requires_grad_(True)

        def step(f):
            y = f(xg, wg, bg, rm, rv)
            torch.autograd.grad(y, (xg, wg, bg), dy)

        step(cfwd)
        ref = fwd(x.float(), wt, bs, rm.clone(), rv.clone())
        err = (cfwd(x, wt, bs, rm.clone(), rv.clone()).float() - ref).abs().max().item()
        t_f = timed(lambda: cfwd(x, wt, bs, rm, rv))
        t_fb = timed(lambda: step(cfwd))
        e_f = timed(lambda: fwd(x, wt, bs, rm, rv))
        e_fb = timed(lambda: step(fwd))
        print(
            f"{layout} 32x{c}x{hw}x{hw}: copy {t_c * 1e3:.1f} us; compile fwd {t_f * 1e3:.1f} us "
            f"({t_c / t_f:.0%} of copy), bwd {(t_fb - t_f) * 1e3:.1f} us; cuDNN fwd "
            f"{e_f * 1e3:.1f}, bwd {(e_fb - e_f) * 1e3:.1f}; err {err:.1e}",
            flush=True,
        )


if __name__ == "__main__" and os.environ.get("TUNE_DEVICE", "cuda") == "cuda":
    main()
