"""Imported first by the tuning harnesses: torch_ext's kernels without its extension.

`torch_ext` becomes a bare package of this checkout's folder (its __init__, which loads
_C and a driver, does not run), so `torch_ext.ops.*` import as plain modules whose
kernels run on torch's own tensors: on `cuda`, or with TUNE_DEVICE=cpu under Triton's
interpreter (a dry run on a machine without a GPU). DEV is the device to use.
"""

import os
import sys
import types

DEV = os.environ.get("TUNE_DEVICE", "cuda")
if DEV == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("TORCH_EXT_DRIVER", "cuda" if DEV == "cuda" else "host")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_pkg = types.ModuleType("torch_ext")
_pkg.__path__ = [os.path.join(ROOT, "torch_ext")]
sys.modules.setdefault("torch_ext", _pkg)
