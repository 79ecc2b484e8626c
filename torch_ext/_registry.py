"""Name -> Python kernel, for the C++ launcher.

A manifest's `triton:` value is either a key of `torch_ext.ops.KERNELS` or
`package.module:attribute`. An attribute that is a `@triton.jit` scalar
function (or a `Pointwise`) is lifted by the pointwise generator to the
TensorIterator calling convention, so a new pointwise op needs only YAML and
that function.
"""

import importlib
import sys

import triton


def _is_jit(obj):
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(obj, (triton.runtime.JITFunction, InterpretedFunction))


def _iterator_kernel(fn, pointwise):
    """A scalar function on a TensorIterator: the iterator's inputs are its
    first parameters, the stub's extra arguments (e.g. lambd) the rest."""
    lifted = {}

    def run(outs, ins, common_dtype, *extra):
        op = lifted.get(len(ins))
        if op is None:
            op = lifted[len(ins)] = pointwise(num_inputs=len(ins))(fn)
        return op.iter(outs, ins, common_dtype, *extra)

    return run


def resolve(name: str, iterator: bool = False):
    """The callable for `name`; `iterator` selects the TensorIterator calling
    convention (stub fills) for kernels made from a scalar function."""
    from torch_ext.ops import KERNELS
    from torch_ext.ops._pointwise import Pointwise, pointwise

    if ":" not in name:
        if name not in KERNELS:
            raise LookupError(f"no Triton kernel named '{name}' in torch_ext.ops.KERNELS")
        return KERNELS[name]
    module, _, attr = name.partition(":")
    obj = getattr(importlib.import_module(module), attr)
    if _is_jit(obj):
        if iterator:
            _size_generic(name)
            return _iterator_kernel(obj, pointwise)
        obj = pointwise()(obj)
    if isinstance(obj, Pointwise):
        if iterator:
            _size_generic(name)
        return obj.iter if iterator else obj
    return obj


def _size_generic(name):
    """Pointwise kernels read sizes through ops/_symbolic.py: their launch plans on the
    TensorIterator path serve every size of a shape class."""
    c_ext = sys.modules.get("torch_ext._C")
    if c_ext is not None and hasattr(c_ext, "_plan_shapes"):
        c_ext._plan_shapes(name, iterator=True)
