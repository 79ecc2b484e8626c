"""GPU tests: the cuda driver, Triton on our streams, tier-2 fast launch.

They need an NVIDIA GPU and are not part of CI's test run (CI has no GPU);
the README's GPU command runs them:

    TORCH_EXT_DRIVER=cuda TORCH_EXT_FALLBACK=error python -m pytest tests_gpu

Without the cuda driver they fail at collection, on purpose: a GPU run that
silently fell back to the host driver must not pass.
"""

import os

os.environ.setdefault("TORCH_EXT_DRIVER", "cuda")
os.environ.setdefault("TORCH_EXT_FALLBACK", "error")

import torch  # noqa: E402

import torch_ext  # noqa: E402,F401

assert torch_ext._C._driver_name() == "cuda", (
    f"tests_gpu needs the cuda driver, got {torch_ext._C._driver_name()!r}"
)

DEV = torch.device("privateuseone", 0)
