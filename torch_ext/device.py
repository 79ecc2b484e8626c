"""`torch.privateuseone`: the device module, in the shape of `torch.cuda`."""

import collections
import os
from typing import Any, Iterable, Optional, Union

import torch

from torch_ext import _C

_TYPE = "privateuseone"
_DEVICE_TYPE = 20  # c10::DeviceType::PrivateUse1, as torch.Stream takes it
_DeviceLike = Union[None, int, str, torch.device]

# ---------------------------------------------------------------- devices


def _index(device: _DeviceLike = None, optional: bool = True) -> int:
    """The device index of `device` (None, an int, "privateuseone[:N]" or a
    torch.device); the current device when it names none."""
    if device is None:
        return current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != _TYPE:
            raise ValueError(f"expected a {_TYPE} device, got {device}")
        return current_device() if device.index is None else device.index
    if isinstance(device, int):
        return device
    raise ValueError(f"cannot interpret {device!r} as a {_TYPE} device")


def is_available() -> bool:
    return _C._device_count() > 0


def is_initialized() -> bool:
    return True  # the runtime initialises when torch_ext is imported


# torch.cuda's flag, read by torch.utils.checkpoint (both flavours): without it the
# checkpoint neither stashes nor restores our RNG state, and dropout draws new masks
# when the forward is recomputed (gradients then differ from the plain backward).
_initialized = True


def init() -> None:
    pass


_in_bad_fork = False


def _is_in_bad_fork() -> bool:
    return _in_bad_fork


def _mark_bad_fork() -> None:
    global _in_bad_fork
    _in_bad_fork = True


# A forked child cannot use the parent's CUDA contexts; host memory is fine.
if _C._driver_name() != "host" and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mark_bad_fork)


def device_count() -> int:
    return _C._device_count()


def current_device() -> int:
    return _C._current_device()


def set_device(device: _DeviceLike) -> None:
    index = _index(device)
    if index >= 0:
        _C._set_device(index)


class device:
    """Context manager that makes `device` current."""

    def __init__(self, device: _DeviceLike) -> None:
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self) -> "device":
        self.previous = current_device()
        if self.index >= 0 and self.index != self.previous:
            _C._set_device(self.index)
        return self

    def __exit__(self, *exc: object) -> bool:
        if self.index >= 0 and self.index != self.previous:
            _C._set_device(self.previous)
        return False


class device_of(device):
    """Context manager that makes the device of tensor `obj` current."""

    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == _TYPE else None)


_DeviceProperties = collections.namedtuple(
    "_DeviceProperties", ["name", "total_memory", "multi_processor_count", "major", "minor"]
)


def get_device_properties(device: _DeviceLike = None) -> _DeviceProperties:
    return _DeviceProperties(*_C._device_properties(_index(device)))


def get_device_name(device: _DeviceLike = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: _DeviceLike = None) -> tuple[int, int]:
    p = get_device_properties(device)
    return (p.major, p.minor)


def synchronize(device: _DeviceLike = None) -> None:
    """Waits for the device; then reports an out-of-range index that an
    earlier kernel recorded (torch_ext/ops/_bounds.py)."""
    _C._synchronize(_index(device))
    from torch_ext.ops import _bounds

    _bounds.raise_pending()


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


# ---------------------------------------------------------------- streams and events


class Stream(torch.Stream):
    """A stream of a privateuseone device; `priority` as in CUDA (lower is
    higher, 0 is normal)."""

    def __new__(cls, device: _DeviceLike = None, priority: int = 0, **kwargs: Any) -> "Stream":
        if "stream_id" in kwargs:  # wrapping an existing stream
            return super().__new__(cls, **kwargs)
        index, stream_id = _C._new_stream(_index(device), priority)
        return super().__new__(
            cls, stream_id=stream_id, device_index=index, device_type=_DEVICE_TYPE
        )

    @property
    def priority(self) -> int:
        return _C._stream_priority(self.device_index, self.stream_id)

    @property
    def native_handle(self) -> int:
        return _C._stream_handle(self.device_index, self.stream_id)

    def __repr__(self) -> str:
        return f"<torch.privateuseone.Stream device={self.device} id={self.stream_id} priority={self.priority}>"


def _wrap(stream: torch.Stream) -> Stream:
    return Stream(
        stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type
    )


class _EventMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, torch.Event) and obj.device.type == _TYPE


class Event(metaclass=_EventMeta):
    """A torch.Event on the privateuseone device (torch.Event does not accept
    subclasses as the other event of elapsed_time, so this makes plain ones)."""

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> torch.Event:
        return torch.Event(
            device=_TYPE, enable_timing=enable_timing, blocking=blocking, interprocess=interprocess
        )


def current_stream(device: _DeviceLike = None) -> Stream:
    return _wrap(torch.accelerator.current_stream(_index(device)))


def default_stream(device: _DeviceLike = None) -> Stream:
    return Stream(stream_id=0, device_index=_index(device), device_type=_DEVICE_TYPE)


def set_stream(stream: Optional[torch.Stream]) -> None:
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """Makes `stream` (and its device) current inside the block."""

    def __init__(self, stream: Optional[torch.Stream]) -> None:
        self.stream = stream

    def __enter__(self) -> "StreamContext":
        if self.stream is None:
            return self
        self.device = device(self.stream.device_index)
        self.device.__enter__()
        self.previous = torch.accelerator.current_stream(self.stream.device_index)
        torch.accelerator.set_stream(self.stream)
        return self

    def __exit__(self, *exc: object) -> bool:
        if self.stream is None:
            return False
        torch.accelerator.set_stream(self.previous)
        self.device.__exit__(*exc)
        return False


def stream(stream: Optional[torch.Stream]) -> StreamContext:
    return StreamContext(stream)


# ---------------------------------------------------------------- memory


def memory_stats(device: _DeviceLike = None) -> "collections.OrderedDict[str, Any]":
    return collections.OrderedDict(sorted(_C._memory_stats(_index(device)).items()))


def memory_allocated(device: _DeviceLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: _DeviceLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: _DeviceLike = None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: _DeviceLike = None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device: _DeviceLike = None) -> None:
    _C._reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device: _DeviceLike = None) -> None:
    _C._reset_accumulated_memory_stats(_index(device))


def empty_cache() -> None:
    _C._empty_cache()


def mem_get_info(device: _DeviceLike = None) -> tuple[int, int]:
    """(free, total) bytes of the device."""
    return tuple(_C._mem_get_info(_index(device)))


# ---------------------------------------------------------------- random


# One Python object per device's default generator, made once.
default_generators = tuple(_C._default_generator(i) for i in range(_C._device_count()))


def _generator(device: _DeviceLike = None) -> torch.Generator:
    index = _index(device)
    if not 0 <= index < len(default_generators):
        _C._check_device(index)  # raises "Invalid device index"
    return default_generators[index]


def get_rng_state(device: _DeviceLike = _TYPE) -> torch.Tensor:
    return _generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state: torch.Tensor, device: _DeviceLike = _TYPE) -> None:
    _generator(device).set_state(new_state.clone())


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        _generator(i).manual_seed(int(seed))


def seed() -> None:
    _generator().seed()


def seed_all() -> None:
    s = _generator(0).seed()
    for i in range(1, device_count()):
        _generator(i).manual_seed(s)


def initial_seed() -> int:
    return _generator().initial_seed()
