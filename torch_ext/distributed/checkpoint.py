"""`dcp.save` of privateuseone tensors where CUDA is available too.

torch's `FileSystemWriter` (default `thread_count=1`) stages tensors through
`_OverlappingCpuLoader`, which copies to the CPU only tensors of the *first*
available accelerator type (`torch._utils._get_available_device_type()`): `cuda`
whenever `torch.cuda.is_available()`. Our tensors then reach the writer still on
privateuseone and it asserts "Tensor must be on CPU". With default arguments
`dcp.save` offers no hook (it builds its planner and writer itself), so this is the
one place where torch_ext patches torch, as narrowly as it can: the name
`_OverlappingCpuLoader` in `torch.distributed.checkpoint.filesystem` becomes a
subclass whose data source copies tensors of the PrivateUse1 device type to the CPU
when the loader's own device type is another one. Everything else, CUDA tensors
included, takes torch's unchanged code. The subclass is installed when that module
is first imported (an import hook, so `import torch_ext` stays as cheap as before),
or at once if it already is.
"""

from __future__ import annotations

import importlib.abc
import sys
from types import ModuleType
from typing import Any, Callable

import torch

FILESYSTEM = "torch.distributed.checkpoint.filesystem"


def _loader_class(base: type) -> type:
    class PrivateUse1AwareCpuLoader(base):
        """torch's overlapping loader, plus PrivateUse1 tensors copied to the CPU
        when the loader overlaps copies of another device type (e.g. `cuda`)."""

        torch_ext_patched = True

        def __init__(self, resolve_fun: Callable[[Any], Any], *args: Any, **kwargs: Any):
            backend = torch._C._get_privateuse1_backend_name()

            def resolve(item: Any) -> Any:
                data = resolve_fun(item)
                if (
                    isinstance(data, torch.Tensor)
                    and data.device.type == backend
                    and self.device_type != backend
                ):
                    data = data.detach().cpu()
                return data

            super().__init__(resolve, *args, **kwargs)

    return PrivateUse1AwareCpuLoader


def patch(module: ModuleType) -> bool:
    """Installs the loader in `module` (torch's filesystem module); False where that
    module has no `_OverlappingCpuLoader` (a torch that no longer needs this)."""
    base = getattr(module, "_OverlappingCpuLoader", None)
    if not isinstance(base, type):
        return False
    if not getattr(base, "torch_ext_patched", False):
        module._OverlappingCpuLoader = _loader_class(base)
    return True


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds torch's filesystem module through the other finders and patches it
    right after it has executed; then takes itself off `sys.meta_path`."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != FILESYSTEM:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_and_patch(module: ModuleType) -> None:
            exec_module(module)
            patch(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)

        loader.exec_module = exec_and_patch
        return spec


def install() -> None:
    """Patches torch's filesystem module now, or when it is first imported."""
    module = sys.modules.get(FILESYSTEM)
    if module is not None:
        patch(module)
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
