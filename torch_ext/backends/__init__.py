"""Per-driver specialisation (seed 000's `spec` / `spec_func`).

Shared kernel code never branches on the driver's name.  It asks:

    block = spec("pointwise_block", numel) or 1024     # a value / a call
    kernel = spec_func("mm_kernel") or _mm_kernel       # a function

and `torch_ext/backends/<driver>/spec.py` may define a function of that name.
A specialisation that answers a yes/no question returns True when it applies
(the default, None, then reads as False).

The active driver is `torch_ext._C._driver_name()` once the extension is
loaded, else TORCH_EXT_DRIVER (torch_ext/config.py), where `auto` means "host"
(standalone kernel tests).
"""

import importlib
import sys
from types import ModuleType
from typing import Any, Callable, Optional

from torch_ext import config

_spec_modules: dict[str, Optional[ModuleType]] = {}


def active_driver() -> str:
    c_ext = sys.modules.get("torch_ext._C")
    if c_ext is not None and hasattr(c_ext, "_driver_name"):
        return c_ext._driver_name()
    name = config.get("TORCH_EXT_DRIVER")
    return "host" if name == "auto" else name


def _spec_module(driver: str) -> Optional[ModuleType]:
    if driver not in _spec_modules:
        try:
            _spec_modules[driver] = importlib.import_module(f"{__name__}.{driver}.spec")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{driver}.spec" and e.name != f"{__name__}.{driver}":
                raise
            _spec_modules[driver] = None
    return _spec_modules[driver]


def spec_func(function_name: str) -> Optional[Callable]:
    """The active driver's specialisation called `function_name`, or None."""
    module = _spec_module(active_driver())
    return getattr(module, function_name, None) if module is not None else None


def spec(function_name: str, *args: Any, **kwargs: Any) -> Any:
    """Calls the active driver's specialisation; None when it has none."""
    func = spec_func(function_name)
    return func(*args, **kwargs) if func is not None else None
