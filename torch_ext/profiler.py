"""torch.profiler for privateuseone: per-op device time and kernel names.

    from torch_ext.profiler import profile
    with profile() as prof:          # CPU + our device
        train_step()
    print(prof.key_averages().table(sort_by="device_time_total"))
    prof.export_chrome_trace("trace.json")

`profile` is torch.profiler.profile (same arguments, schedules included) with
the PrivateUse1 activity in the form torch 2.11 and 2.13 offer our device:
ProfilerState.KINETO_PRIVATEUSE1_FALLBACK, which records a device event on
the current stream when each op starts and ends (csrc/runtime/Profiler.cpp
registers those hooks), so every aten op gets its device time. torch only
selects that state for a *renamed* PrivateUse1 backend; ours keeps the name
"privateuseone", so this class selects it. Each Triton kernel launched
through the Python path shows as a `triton:<kernel>` range (with its own
device time) under the aten op that launched it; launches replayed by the
C++ fast path carry no name. Per-kernel device records (a Kineto
IActivityProfiler for PrivateUse1) are not offered by these torch versions.
"""

import torch
import torch.autograd.profiler as _autograd_profiler
import torch.profiler.profiler as _profiler_module
from torch._C._profiler import ProfilerState
from torch.profiler import ProfilerActivity

BACKEND = "privateuseone"


class _DeviceFallbackProfile(_autograd_profiler.profile):
    """torch.autograd.profiler.profile in the PrivateUse1 fallback state."""

    def __init__(self, *args, use_device=None, **kwargs):
        super().__init__(*args, use_device=None, **kwargs)
        if use_device == BACKEND:
            self.use_device = BACKEND
            self.profiler_kind = ProfilerState.KINETO_PRIVATEUSE1_FALLBACK


class profile(torch.profiler.profile):
    """torch.profiler.profile with our device's activity (see module doc)."""

    def __init__(self, *args, activities=None, **kwargs):
        activities = set(activities or (ProfilerActivity.CPU, ProfilerActivity.PrivateUse1))
        self._device = ProfilerActivity.PrivateUse1 in activities
        if self._device:
            # The fallback times ops that the CPU activity records.
            activities = (activities - {ProfilerActivity.PrivateUse1}) | {ProfilerActivity.CPU}
        super().__init__(*args, activities=list(activities), **kwargs)

    def prepare_trace(self):
        if not self._device:
            return super().prepare_trace()
        self.use_device = BACKEND
        saved = _profiler_module.prof.profile
        _profiler_module.prof.profile = _DeviceFallbackProfile
        try:
            super().prepare_trace()
        finally:
            _profiler_module.prof.profile = saved
