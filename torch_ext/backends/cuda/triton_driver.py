"""A Triton driver that launches on torch_ext's devices and streams.

Triton's own `CudaDriver` takes the current device and stream from
`torch.cuda` (Triton 3.6 always, 3.9 whenever torch is imported). Ours keeps
its compiler, launcher and module loading, and answers those questions from
torch_ext: the current `privateuseone` device and the raw CUstream of its
current stream, in the device's primary context (the one our allocator's
memory lives in). `activate()` installs it with `triton.runtime.driver.set_active`.

Its launcher also reports each launch to the launch-plan layer
(csrc/launch/Plan.h) while C++ is recording a call, so that later calls with
the same key are launched from C++ directly.
"""

from typing import Any, Optional, Sequence

import torch
from triton.backends.nvidia.driver import CudaDriver
from triton.runtime import driver as triton_driver

from torch_ext import _C
from torch_ext.ops import _launch


def _observing(launcher_cls: type) -> type:
    """Triton's launcher class, reporting launches to the fast launcher."""

    class ObservedLauncher(launcher_cls):
        def __init__(self, src: Any, metadata: Any) -> None:
            super().__init__(src, metadata)
            self._fast_types = _fast_types(src, metadata)
            # global scratch a program (tensor descriptors made on the device): replays
            # allocate it as Triton's launcher does
            self._fast_scratch = getattr(metadata, "global_scratch_size", 0) * getattr(
                metadata, "num_ctas", 1
            )
            signature = getattr(src, "signature", None)
            self._fast_names = list(signature) if isinstance(signature, dict) else []
            self._fast_threads = 32 * getattr(metadata, "num_warps", 4)
            self._fast_shared = getattr(metadata, "shared", 0)
            self._fast_name = getattr(getattr(src, "fn", None), "__name__", None) or str(
                getattr(metadata, "name", "kernel")
            )

        # Triton (3.6 and 3.9) calls: grid x/y/z, stream, function, packed
        # metadata, launch metadata, enter hook, exit hook, *kernel arguments.
        def __call__(
            self, gridX: int, gridY: int, gridZ: int, stream: int, function: int, *rest: Any
        ) -> Any:
            if _C._plan_recording():
                types, values, marks = self._fast_types, None, []
                if types is not None and len(rest) - 4 == len(types):
                    philox = _launch.pending_philox
                    if philox:
                        marks = _philox_marks(self._fast_names, types, philox)
                    values, types = _fast_values(types, rest[4:])
                else:
                    types = None
                _C._plan_observe_cuda(
                    (gridX, gridY, gridZ),
                    function,
                    self._fast_threads,
                    self._fast_shared,
                    types,
                    values or [],
                    self._fast_name,
                    marks,
                    _launch.pending_grid or [],
                    self._fast_scratch,
                )
            return super().__call__(gridX, gridY, gridZ, stream, function, *rest)

    return ObservedLauncher


def _fast_types(src: Any, metadata: Any) -> Optional[list[str]]:
    """Each kernel argument's Triton type ('constexpr' for those compiled
    in), or None when the launch is not a plain one C++ can replay."""
    signature = getattr(src, "signature", None)
    plain = (
        getattr(metadata, "num_ctas", 1) == 1
        and not getattr(metadata, "launch_pdl", False)
        and not getattr(metadata, "launch_cooperative_grid", False)
        and not getattr(metadata, "profile_scratch_size", 0)
        and tuple(getattr(metadata, "cluster_dims", (1, 1, 1)) or (1, 1, 1))
        in ((1, 1, 1), (1,), ())
        and isinstance(signature, dict)
        and all(isinstance(t, str) for t in signature.values())
    )
    return list(signature.values()) if plain else None


def _philox_marks(names: Sequence[str], types: Sequence[str], philox: dict) -> list:
    """(index among the non-constexpr parameters, which, ordinal) of each
    parameter the launch marked as a Philox seed or offset."""
    marks, kept = [], 0
    for name, ty in zip(names, types):
        if ty == "constexpr":
            continue
        if name in philox:
            which, ordinal = philox[name]
            marks.append((kept, which, ordinal))
        kept += 1
    if len(marks) != len(philox):
        marks.append((-1, 0, -1))  # a marked name not found: the recording fails
    return marks


def _fast_values(types: Sequence[str], args: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """(values, types) of the non-constexpr arguments, pointers as ints."""
    values, kept = [], []
    for ty, arg in zip(types, args):
        if ty == "constexpr":
            continue
        if ty.startswith("*"):
            arg = 0 if arg is None else (arg if isinstance(arg, int) else arg.data_ptr())
        kept.append(ty)
        values.append(arg)
    return values, kept


class PrivateUse1CudaDriver(CudaDriver):
    def __init__(self) -> None:
        super().__init__()
        if hasattr(_C, "_plan_recording"):
            self.launcher_cls = _observing(self.launcher_cls)
        # Instance attributes, as Triton's GPUDriver sets them; Triton's
        # JIT calls these before every launch.
        self.get_current_device = _C._cuda_current_device
        self.set_current_device = _C._cuda_set_device
        self.get_current_stream = _C._cuda_current_raw_stream
        self.get_device_capability = _C._cuda_device_capability

    @staticmethod
    def is_active() -> bool:
        return True

    def get_active_torch_device(self) -> torch.device:
        return torch.device("privateuseone", self.get_current_device())

    def get_device_interface(self) -> Any:
        return torch.privateuseone

    def get_empty_cache_for_benchmark(self) -> torch.Tensor:
        # As Triton's: a 256 MB buffer that do_bench clears between runs.
        return torch.empty(64 * 1024 * 1024, dtype=torch.int, device=self.get_active_torch_device())


def activate() -> None:
    """Makes Triton compile and launch for torch_ext's cuda driver."""
    # Reading `triton_driver.active` would build Triton's default driver first.
    if not isinstance(getattr(triton_driver, "_active", None), PrivateUse1CudaDriver):
        triton_driver.set_active(PrivateUse1CudaDriver())
