"""A Triton driver that launches on torch_ext's devices and streams.

Triton's own `CudaDriver` takes the current device and stream from
`torch.cuda` (Triton 3.6 always, 3.9 whenever torch is imported). Ours keeps
its compiler, launcher and module loading, and answers those questions from
torch_ext: the current `privateuseone` device and the raw CUstream of its
current stream, in the device's primary context (the one our allocator's
memory lives in). `activate()` installs it with `triton.runtime.driver.set_active`.
"""
import torch
from triton.backends.nvidia.driver import CudaDriver
from triton.runtime import driver as triton_driver

from torch_ext import _C


class PrivateUse1CudaDriver(CudaDriver):
    def __init__(self):
        super().__init__()
        # Instance attributes, as Triton's GPUDriver sets them; Triton's
        # JIT calls these before every launch.
        self.get_current_device = _C._cuda_current_device
        self.set_current_device = _C._cuda_set_device
        self.get_current_stream = _C._cuda_current_raw_stream
        self.get_device_capability = _C._cuda_device_capability

    @staticmethod
    def is_active():
        return True

    def get_active_torch_device(self):
        return torch.device("privateuseone", self.get_current_device())

    def get_device_interface(self):
        return torch.privateuseone

    def get_empty_cache_for_benchmark(self):
        # As Triton's: a 256 MB buffer that do_bench clears between runs.
        return torch.empty(64 * 1024 * 1024, dtype=torch.int, device=self.get_active_torch_device())


def activate():
    """Makes Triton compile and launch for torch_ext's cuda driver."""
    # Reading `triton_driver.active` would build Triton's default driver first.
    if not isinstance(getattr(triton_driver, "_active", None), PrivateUse1CudaDriver):
        triton_driver.set_active(PrivateUse1CudaDriver())
