"""The CPU fallback's mode and statistics (see csrc/aten/Fallback.cpp)."""

from typing import Literal

from torch_ext import _C

Mode = Literal["warn", "silent", "error"]

MODES = ("warn", "silent", "error")


class fallback_mode:
    """Sets the CPU fallback mode: "warn" (warn once per op), "silent" or
    "error" (an op without a device kernel raises).

    A plain call sets it for good; as a context manager the previous mode
    comes back on exit:

        torch_ext.fallback_mode("error")
        with torch_ext.fallback_mode("silent"):
            ...
    """

    def __init__(self, mode: Mode) -> None:
        if mode not in MODES:
            raise ValueError(f"fallback mode must be one of {MODES}, got {mode!r}")
        self.previous = _C._get_fallback_mode()
        _C._set_fallback_mode(mode)

    def __enter__(self) -> "fallback_mode":
        return self

    def __exit__(self, *exc: object) -> bool:
        _C._set_fallback_mode(self.previous)
        return False

    @staticmethod
    def current() -> str:
        return _C._get_fallback_mode()


def fallback_stats() -> dict[str, int]:
    """{"aten::op.overload": how many times it ran on the CPU} since the last reset."""
    return dict(_C._fallback_stats())


def reset_fallback_stats() -> None:
    _C._reset_fallback_stats()
