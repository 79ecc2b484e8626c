"""Counting Triton's compilations, and a progress line while they take long.

    import torch_ext
    torch_ext.compile_stats()
    # {'compiled': 3, 'cache_hits': 41, 'compile_seconds': 4.2, 'load_seconds': 0.3,
    #  'listening': True}

Every kernel specialisation a process uses passes once through `triton.compile`
(later launches find it in the kernel's in-memory cache). There Triton either
finds the binary in its on-disk cache (`TRITON_CACHE_DIR`, default
`~/.triton/cache`) -- a *cache hit*, which reads files -- or runs its compiler
pipeline and `ptxas` -- a *real compilation*, hundreds of milliseconds to
seconds each. `compile_stats()` counts both, with the time each took, from
Triton's compilation listener (`triton.knobs.compilation.listener`, called by
`triton.compile` with `cache_hit=`; the same in Triton 3.6 and 3.9). A second
process that runs the same model with the same cache directory reports
`compiled == 0`.

Under the host driver Triton runs kernels in its interpreter, which compiles
nothing: both counts stay 0.

While real compilations keep coming for more than a few seconds (a first call
of a model), a line on stderr says how many and for how long:

    torch_ext: compiling Triton kernels (12 so far, 8.3 s)...

`TORCH_EXT_COMPILE_PROGRESS=0` silences it. The line is written when a
compilation finishes (Triton's listener is called at the end of each), so a
single compilation longer than the threshold shows once it is done.
"""

import sys
import threading
import time
from typing import Any, Optional

from torch_ext import config

__all__ = ["compile_stats", "reset_compile_stats", "install"]

# A burst of compilations: those that follow each other with gaps under
# _BURST_GAP seconds. A line is shown once a burst has lasted _PROGRESS_AFTER
# seconds, then at most every _PROGRESS_EVERY seconds.
_BURST_GAP = 2.0
_PROGRESS_AFTER = 3.0
_PROGRESS_EVERY = 2.0

_lock = threading.Lock()
_stats = {"compiled": 0, "cache_hits": 0, "compile_seconds": 0.0, "load_seconds": 0.0}
_burst = {"start": None, "end": 0.0, "count": 0, "shown": 0.0}
_listener_installed: Optional[Any] = None
_previous_listener: Optional[Any] = None


def compile_stats() -> dict[str, Any]:
    """{'compiled': real Triton compilations (on-disk cache misses),
    'cache_hits': compilations answered by Triton's on-disk cache,
    'compile_seconds' / 'load_seconds': the time each kind took,
    'listening': whether the counting listener is still Triton's} since
    import or the last `reset_compile_stats()`."""
    with _lock:
        stats: dict[str, Any] = dict(_stats)
    stats["compile_seconds"] = round(stats["compile_seconds"], 6)
    stats["load_seconds"] = round(stats["load_seconds"], 6)
    stats["listening"] = _listening()
    return stats


def reset_compile_stats() -> None:
    """Sets the counts and times of `compile_stats()` to zero."""
    with _lock:
        _stats.update(compiled=0, cache_hits=0, compile_seconds=0.0, load_seconds=0.0)
        _burst.update(start=None, end=0.0, count=0, shown=0.0)


def _listening() -> bool:
    try:
        from triton import knobs
    except ImportError:
        return False
    return _listener_installed is not None and knobs.compilation.listener is _listener_installed


def _duration(times: Any) -> float:
    """Seconds a compilation took, from the listener's CompileTimes."""
    try:
        return times.total / 1e6  # microseconds, in Triton 3.6 and 3.9
    except (AttributeError, TypeError):
        return 0.0


def _on_compile(*, src: Any, metadata: Any, metadata_group: Any, times: Any, cache_hit: bool):
    seconds = _duration(times)
    line = None
    with _lock:
        if cache_hit:
            _stats["cache_hits"] += 1
            _stats["load_seconds"] += seconds
        else:
            _stats["compiled"] += 1
            _stats["compile_seconds"] += seconds
            line = _progress(time.monotonic(), seconds)
    if line is not None:
        print(line, file=sys.stderr, flush=True)
    if _previous_listener is not None:
        _previous_listener(
            src=src, metadata=metadata, metadata_group=metadata_group, times=times,
            cache_hit=cache_hit,
        )  # fmt: skip


def _progress(now: float, seconds: float) -> Optional[str]:
    """The progress line to show after a real compilation that ended at
    `now` and took `seconds`, or None (called under _lock)."""
    began = now - seconds
    if _burst["start"] is None or began - _burst["end"] > _BURST_GAP:
        _burst.update(start=began, count=0, shown=0.0)
    _burst["start"] = min(_burst["start"], began)  # parallel compilations overlap
    _burst["end"] = now
    _burst["count"] += 1
    elapsed = now - _burst["start"]
    if elapsed < _PROGRESS_AFTER or now - _burst["shown"] < _PROGRESS_EVERY:
        return None
    if not config.get("TORCH_EXT_COMPILE_PROGRESS"):
        return None
    _burst["shown"] = now
    return f"torch_ext: compiling Triton kernels ({_burst['count']} so far, {elapsed:.1f} s)..."


def install() -> None:
    """Makes `compile_stats()` count: sets Triton's compilation listener to
    ours, which calls the listener that was there before (import torch_ext
    calls this; calling it again does nothing)."""
    global _listener_installed, _previous_listener
    try:
        from triton import knobs

        knobs.compilation.listener  # noqa: B018  (Triton >= 3.4 has it)
    except (ImportError, AttributeError):  # compile_stats() then says listening: False
        return
    if _listener_installed is not None and knobs.compilation.listener is _listener_installed:
        return
    previous = knobs.compilation.listener
    _previous_listener = previous if previous is not _listener_installed else None
    _listener_installed = _on_compile
    knobs.compilation.listener = _on_compile
