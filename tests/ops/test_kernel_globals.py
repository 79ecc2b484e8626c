"""Triton's compiler (unlike its interpreter, which CI runs) refuses a kernel that reads a
module-level number that is not a ``tl.constexpr``, and Triton 3.6's (the GPU machine's)
refuses a nested tuple as an assignment or loop target (`a, (b, c) = ...`: its dependency
scan hashes the inner list; 3.9's does not). Every @triton.jit function in the op library
is checked here, so such a kernel fails on the host and not first on the GPU."""

import ast
import importlib
import inspect
import pkgutil
import textwrap

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


def _nested_targets(fn):
    """Line numbers of assignment / loop targets in `fn` that nest a tuple in a tuple."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    lines = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.For, ast.AugAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, (ast.Tuple, ast.List)) and any(
                isinstance(e, (ast.Tuple, ast.List)) for e in t.elts
            ):
                lines.append(node.lineno)
    return lines


def test_jit_functions_have_no_nested_tuple_targets():
    bad = [f"{q} (line {n} of its source)" for q, fn in _jit_functions()
           for n in _nested_targets(fn)]  # fmt: skip
    assert not bad, "Triton 3.6 cannot compile nested tuple targets: " + "; ".join(bad)


def test_nested_target_scan_finds_one():
    def kernel(S, sN, sC):
        S, (sN, sC) = S, (sN, sC)
        return S

    assert _nested_targets(kernel) == [2]
