"""What every op family shares: the kernel registry and its declaration.

`@kernel()` over a wrapper (or over a `@pointwise` scalar function) declares it as the
Python kernel that a manifest entry's `triton: <name>` calls; the name is the function's
unless given. The declaration is read twice: at import it fills `KERNELS`, and codegen
reads the same decorators from the source (without importing anything, see
codegen/kernels.py) to check the manifest's names at build time. Keyword arguments are
kept as the kernel's declared metadata (`KERNEL_INFO`): constants only, so that codegen
can read them too — the place for a kernel's launch rule.
"""

from __future__ import annotations

from typing import Any, Callable


# What a kernel gets for an `at::Scalar` argument (csrc/launch/Launcher.h to_arg): a
# Python number. Kernel wrappers annotate their parameters with the Python types the
# C++ passes (tests/codegen/test_kernel_signatures.py checks that they do).
Scalar = bool | int | float | complex

KERNELS: dict[str, Callable[..., Any]] = {}
KERNEL_INFO: dict[str, dict[str, Any]] = {}


def kernel(name: str | None = None, **info: Any) -> Callable[[Any], Any]:
    """Declare the decorated callable as kernel `name` (default: its own name). A
    `Pointwise` registers its TensorIterator form (`.iter`, the stub convention).
    `numbers=(i, ...)` (or the callable's `call_numbers`): arguments whose floats are
    per-call numbers, left out of the launch-plan key (ops/_launch.py CallNumber).
    `shapes=True`: the wrapper reads sizes through ops/_symbolic.py, so one launch plan
    serves every size of a shape class (csrc/launch/PlanShapes.cpp); `size_args=(i, ...)`:
    integer arguments that are sizes its Python does not read (lengths it is handed), left
    out of the class key."""

    def register(fn: Any) -> Any:
        key = name or getattr(fn, "name", None) or fn.__name__
        if key in KERNELS:
            raise ValueError(f"kernel '{key}' is declared twice")
        iterator = getattr(fn, "iter", None)
        KERNELS[key] = iterator if callable(iterator) else fn
        if info.get("shapes"):  # size-generic launch plans (ops/_symbolic.py)
            from ._symbolic import traced

            KERNELS[key] = traced(KERNELS[key])
        KERNEL_INFO[key] = dict(info)
        # per-call numbers (ops/_launch.py CallNumber): `numbers=` or the callable's own
        numbers = tuple(info.get("numbers", getattr(fn, "call_numbers", ())))
        if numbers:
            KERNEL_INFO[key]["numbers"] = numbers
        return fn

    return register
