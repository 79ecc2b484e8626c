"""The annotations of the kernel wrappers resolve (no misspelt type names) and say what
the registry's callers pass: see tests/codegen/test_kernel_signatures.py for the rule."""

import inspect
import typing

import torch

from torch_ext.ops import KERNELS
from torch_ext.ops._declare import Scalar


def _wrappers():
    return {k: f for k, f in KERNELS.items() if inspect.isfunction(f)}


def test_annotations_resolve():
    fns = _wrappers()
    assert len(fns) > 200
    for name, fn in fns.items():
        hints = typing.get_type_hints(fn)
        params = inspect.signature(fn).parameters
        assert set(params) | {"return"} <= set(hints), (name, set(params) - set(hints))


def test_examples():
    assert typing.get_type_hints(KERNELS["sum"]) == {
        "self": torch.Tensor,
        "dim": list[int] | None,
        "keepdim": bool,
        "dtype": torch.dtype | None,
        "out": torch.Tensor,
        "return": type(None),
    }
    hints = typing.get_type_hints(KERNELS["native_dropout"])
    assert hints["return"] == tuple[torch.Tensor, torch.Tensor]
    assert typing.get_type_hints(KERNELS["addmm"])["beta"] == Scalar
    hints = typing.get_type_hints(KERNELS["native_group_norm_backward"])
    assert hints["return"] == tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]


def test_foreach_closures_say_what_they_return():
    # One factory makes the generated foreach overloads; each closure's return says
    # whether it is the functional variant (a new list) or in place / out (nothing).
    tensors = list[torch.Tensor]
    assert typing.get_type_hints(KERNELS["foreach_add_Scalar"])["return"] == tensors
    assert typing.get_type_hints(KERNELS["foreach_add__Scalar"])["return"] is type(None)
    assert typing.get_type_hints(KERNELS["foreach_add_Scalar_out"])["return"] is type(None)
    assert tensors in typing.get_args(typing.get_type_hints(KERNELS["foreach_exp"])["args"])
