"""Kernel tests run on `device`:

cpu            (default) Triton's interpreter on CPU tensors; torch_ext._C
               is used when built, not needed otherwise
privateuseone  the extension's device (host driver: interpreter on host memory)
cuda           compiled Triton on a CUDA build of torch, without torch_ext._C
               (checks the kernels under the real compiler)

  TORCH_EXT_TEST_DEVICE=privateuseone pytest tests/ops
"""

import os
import sys
import types

import pytest

from helpers import KERNEL_DEVICE as DEVICE

if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")
if DEVICE == "cuda":
    os.environ.setdefault("TORCH_EXT_DRIVER", "cuda")  # the cuda specialisations

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _import_torch_ext():
    """torch_ext.ops without requiring the compiled extension on "cpu"."""
    if DEVICE == "privateuseone":
        import torch_ext  # noqa: F401  (registers the device)

        return
    try:
        if DEVICE == "cuda":
            raise ImportError("kernels only")
        import torch_ext  # noqa: F401
    except Exception:  # no (or a stale) build: the kernels need none on "cpu"
        # No built extension: a bare package object lets torch_ext.ops import.
        for name in [m for m in sys.modules if m == "torch_ext" or m.startswith("torch_ext.")]:
            del sys.modules[name]
        pkg = types.ModuleType("torch_ext")
        pkg.__path__ = [os.path.join(_ROOT, "torch_ext")]
        sys.modules["torch_ext"] = pkg


if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
_import_torch_ext()


@pytest.fixture
def device():
    return DEVICE


def pytest_configure(config):
    # Masked-off lanes of interpreted kernels compute on padding (0/0, log(0)).
    config.addinivalue_line("filterwarnings", "ignore::RuntimeWarning")
