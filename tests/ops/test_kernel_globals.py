"""Triton's compiler (unlike its interpreter, which CI runs) refuses a kernel that reads a
module-level number that is not a ``tl.constexpr``. Every @triton.jit function in the op
library is checked here, so such a kernel fails on the host and not first on the GPU."""

import importlib
import pkgutil

import triton.language as tl
from triton.runtime.jit import KernelInterface

import torch_ext.ops as ops


def _jit_functions():
    for info in pkgutil.walk_packages(ops.__path__, "torch_ext.ops."):
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            fn = getattr(obj, "fn", None)
            if isinstance(obj, KernelInterface) and getattr(fn, "__module__", None) == mod.__name__:
                yield f"{mod.__name__}.{name}", fn


def test_jit_functions_read_only_constexpr_globals():
    found = list(_jit_functions())
    assert len(found) > 150, "the scan found too few @triton.jit functions"
    bad = []
    for qualname, fn in found:
        for g in fn.__code__.co_names:
            value = fn.__globals__.get(g)
            if isinstance(value, (bool, int, float)) and not isinstance(value, tl.constexpr):
                bad.append(f"{qualname} reads {g} = {value!r}")
    assert not bad, "wrap these module-level numbers in tl.constexpr: " + "; ".join(bad)
