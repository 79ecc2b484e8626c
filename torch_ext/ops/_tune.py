"""Tile configurations chosen by measurement, remembered across processes.

    cfg = tuned("conv", key, candidates, run)
    run(cfg)

`candidates` lists an op's launch configurations (tile sizes, warps, stages), its
heuristic's choice first; `run(cfg)` launches the op's kernels with one of them and
writes the op's outputs (each candidate computes the same result, so tuning launches
only overwrite). The first call with a `key` (every value that changes the launch:
sizes, strides, dtype, flags) times each candidate on the device's current stream
(one launch to compile and warm up, one to measure the host's time to queue a call,
then a few timed ones behind a spin that covers it, between two timing events), times
the three fastest twice more and keeps the one of least median; later
calls, and later processes, read it back.

Switch: TORCH_EXT_AUTOTUNE. `auto` (the default) tunes where the driver says timings
mean something (the cuda driver; Triton's interpreter on the host driver does not),
`on` tunes on any driver (the tests use it on the host driver), `off` always takes
the heuristic's choice. Under `torch.use_deterministic_algorithms(True)` nothing is
timed: a remembered choice is used, else the heuristic's, so that a deterministic
run does not depend on timing noise.

The choices are kept in `<TORCH_EXT_CACHE_DIR>/autotune/<device>-<driver>-triton-<version>.json`,
one file per GPU model, driver and Triton version, as {family|key: config}. A
process merges its new choices into the file (read, merge, write a temporary,
rename), so concurrent processes lose nothing but a duplicate measurement; an
unreadable file is ignored (and rewritten). A remembered configuration that is no
longer a candidate (the candidate list changed) is measured again.

Before timing, the candidates are compiled side by side, in up to
TORCH_EXT_COMPILE_THREADS threads (Triton's compiler and ptxas release the GIL for most of
their work): a first ResNet-50 step compiles about a hundred candidates. Each thread runs
`run(cfg)` under `_launch.compiling_only()`, where launches compile and run nothing; a
candidate that fails to compile fails again when timed and is skipped there.

A call that tunes while the launch-plan layer records it is not kept (the timing
launches are not the op's); the next call with that key records the chosen launch.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from typing import Any, Callable, Optional, Sequence

import torch

from concurrent.futures import ThreadPoolExecutor

from .. import config as _config
from ..backends import active_driver, spec
from ._launch import compiling, compiling_only, launch, retry_recording
from ._spin import spin_kernel

_REPS = 5  # timed launches per candidate, after one warm-up launch
_FINALISTS = 3  # the fastest candidates timed twice more (_fastest)

_lock = threading.RLock()
_memory: dict[str, tuple] = {}  # "family|key" -> config, this process
_loaded: set[str] = set()  # cache files read into _memory
stats = {"tuned": 0, "timed_launches": 0}


def enabled() -> bool:
    """Whether a new key is timed (TORCH_EXT_AUTOTUNE, the driver, deterministic mode)."""
    mode = _config.get("TORCH_EXT_AUTOTUNE")
    if mode == "off" or torch.are_deterministic_algorithms_enabled():
        return False
    return mode == "on" or bool(spec("autotune"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "device"


def cache_file(device: torch.device) -> str:
    from triton import __version__ as triton_version

    from ..backends import active_driver
    from ._pointwise import cache_dir

    try:
        name = torch.privateuseone.get_device_name(device.index or 0)
    except Exception:  # noqa: BLE001 -- a name only labels the file
        name = "device"
    stem = f"{_slug(name)}-{active_driver()}-triton-{triton_version}"
    return os.path.join(cache_dir(), "autotune", stem + ".json")


def _read(path: str) -> dict[str, list]:
    try:
        with open(path) as f:
            data = json.load(f)
        entries = data.get("entries", {}) if isinstance(data, dict) else {}
        return {k: v for k, v in entries.items() if isinstance(v, list)}
    except (OSError, ValueError):
        return {}


def _load(path: str) -> None:
    if path in _loaded:
        return
    _loaded.add(path)
    for k, v in _read(path).items():
        _memory.setdefault(k, tuple(v))


def _store(path: str, entry: str, cfg: tuple) -> None:
    """Merges {entry: cfg} into the file (best effort: tuning must not fail an op)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        entries = _read(path)
        entries[entry] = list(cfg)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"version": 1, "entries": entries}, f, indent=0, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def _key_text(key: Sequence[Any]) -> str:
    return ",".join(str(v).replace("torch.", "") for v in key)


_spin_flags: dict[Any, torch.Tensor] = {}


def _hold_stream(device: torch.device, queue_ns: float = 0.0) -> None:
    """Keeps the current stream busy for spec("tune_spin_ns") nanoseconds (a GPU spin),
    or twice `queue_ns` (the host's time to queue the timed launches) where longer, at
    most 50 ms, so that the timed launches queued meanwhile run back to back: their
    Python costs more than a small kernel runs, and timing it picked tiles at random
    (H200, session 18: a ResNet-50 1x1 weight gradient tuned to 91 us whose best
    candidate runs 42); a candidate that tunes ops of its own looks each up on every
    call, more than the fixed spin covered (session 23: a 0.069 ms product kept over a
    0.015 ms kernel whose calls ran its tuner's lookups)."""
    ns = spec("tune_spin_ns")
    if not ns:
        return
    ns = int(min(max(ns, 2 * queue_ns), 50e6))
    flag = _spin_flags.get(device)
    if flag is None:
        flag = _spin_flags[device] = torch.zeros(1, dtype=torch.int64, device=device)
    launch(spin_kernel(), (1,), flag, int(ns))


def _time(run: Callable[[tuple], Any], cfg: tuple, device: torch.device) -> float:
    """Milliseconds per launch of `cfg` on the current stream (the device's time: the
    launches are queued behind a spin, _hold_stream)."""
    run(cfg)  # compiles, warms the caches
    t0 = time.perf_counter()
    run(cfg)  # the host's time to queue a call
    _hold_stream(device, (time.perf_counter() - t0) * 1e9 * _REPS)
    start = torch.Event(device=device, enable_timing=True)
    end = torch.Event(device=device, enable_timing=True)
    start.record()
    for _ in range(_REPS):
        run(cfg)
    end.record()
    end.synchronize()
    stats["timed_launches"] += _REPS + 2
    return start.elapsed_time(end) / _REPS


def compile_threads() -> int:
    """Threads that compile tuning candidates side by side (TORCH_EXT_COMPILE_THREADS,
    default: the CPUs this process may use, at most 8)."""
    n = _config.get("TORCH_EXT_COMPILE_THREADS")
    if n is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        n = min(8, cpus or 1)
    return max(1, n)


def precompile(candidates: Sequence[tuple], run: Callable[[tuple], Any], device) -> int:
    """Compiles each candidate's kernels, side by side (module doc); the number of
    threads used (0: nothing to compile here: the host driver interprets kernels)."""
    workers = min(len(candidates), compile_threads())
    if workers < 2 or active_driver() == "host":
        return 0
    from triton.runtime import driver

    index = torch.device(device).index or 0

    def one(cfg):
        with compiling_only():
            try:
                driver.active.set_current_device(index)
                run(cfg)
            except Exception:  # noqa: BLE001 -- timing meets it again and skips the candidate
                pass

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="torch_ext_tune") as pool:
        list(pool.map(one, candidates))
    return workers


def tuned(
    family: str,
    key: Sequence[Any],
    candidates: Sequence[tuple],
    run: Callable[[tuple], Any],
    device: torch.device,
) -> tuple:
    """The configuration to launch with (module doc); candidates[0] when not tuning."""
    candidates = list(dict.fromkeys(tuple(c) for c in candidates))
    if len(candidates) == 1 or _config.get("TORCH_EXT_AUTOTUNE") == "off" or compiling():
        return candidates[0]  # (compiling: a nested op while candidates precompile)
    entry = f"{family}|{_key_text(key)}"
    path = cache_file(device)
    with _lock:
        _load(path)
        known = _memory.get(entry)
        if known in candidates:
            return known
        if not enabled():
            return candidates[0]
        precompile(candidates, run, device)
        best = _fastest(family, candidates, run, device)
        _memory[entry] = best
        stats["tuned"] += 1
        _store(path, entry, best)
        retry_recording()
        return best


def _fastest(family, candidates, run, device) -> tuple:
    """The candidate that times fastest: each once, then the _FINALISTS fastest twice
    more, in turns, each judged by the median of its three timings (the minimum of
    one-off timings of near-equal candidates picks whichever drew the luckiest clock,
    and a pick of a few percent slower than the best is kept for good); a candidate
    that fails is skipped, the heuristic's failure raised when none ran."""
    times: dict[tuple, list[float]] = {}
    first_error: Optional[BaseException] = None
    for cfg in candidates:
        try:
            times[cfg] = [_time(run, cfg, device)]
        except Exception as e:  # noqa: BLE001 -- e.g. a tile that needs too much shared memory
            if cfg == candidates[0]:
                first_error = e
    if not times:
        raise (
            first_error
            if first_error is not None
            else RuntimeError(f"torch_ext: no {family} configuration ran")
        )
    finalists = sorted(times, key=lambda c: times[c][0])[:_FINALISTS]
    if len(finalists) > 1:
        for _ in range(2):
            for cfg in finalists:
                try:
                    times[cfg].append(_time(run, cfg, device))
                except Exception:  # noqa: BLE001 -- ran before: count it out, not fail
                    times[cfg].append(float("inf"))
    return min(finalists, key=lambda c: (sorted(times[c])[len(times[c]) // 2], times[c][0]))


def forget() -> None:
    """Drops this process's choices (the files stay): the tests' fresh start."""
    with _lock:
        _memory.clear()
        _loaded.clear()
        for k in stats:
            stats[k] = 0
