"""Precompiling a model's Triton kernels: record them once, compile them ahead.

    import torch_ext
    torch_ext.warmup(train_step, batch)     # runs train_step(batch) once, recording
                                            # every kernel specialisation it compiles
    torch_ext.warmup()                      # a later process: compiles (or loads from
                                            # Triton's cache) all recorded kernels ahead,
                                            # in parallel, without running the model

    python -m torch_ext.warmup                        # the same, from the shell
    python -m torch_ext.warmup --record gpt2 train.py # run a script once, recording
    python -m torch_ext.warmup gpt2 other.json -j 8   # named records or files

A *record* is a JSON file that lists, for each kernel specialisation a run
compiled, the kernel (`module:qualname`, or the generated pointwise kernel it
is) and Triton's own serialised specialisation (what `JITFunction.preload`
takes: signature, constexprs, attributes, options). Records live in
`warmup_dir()` (`<TORCH_EXT_CACHE_DIR>/warmup`, default
`~/.cache/torch_ext/pointwise/warmup`) as `<name>.json`; recording into an
existing record adds to it. Precompiling puts each kernel in its JIT
function's in-memory cache, so the model's first call later compiles and
loads nothing from disk (`torch_ext.compile_stats()` counts what it did).
Entries recorded for another GPU or Triton version are skipped, not failed.

Under the host driver Triton runs kernels in its interpreter: there is nothing
to compile or record, and both calls say so in their report.

`torch_ext.warmup` is this module, callable: `torch_ext.warmup(...)` is
`torch_ext.warmup.warmup(...)`.
"""

import contextlib
import importlib
import json
import os
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence, Union

from torch_ext import compile_cache

__all__ = ["warmup", "record", "precompile", "warmup_dir", "record_path", "Report", "Recording"]

FORMAT = "torch_ext.warmup/1"
PathLike = Union[str, "os.PathLike[str]"]


def warmup_dir() -> str:
    """The folder of named records: `<TORCH_EXT_CACHE_DIR>/warmup`."""
    from torch_ext.ops import _pointwise

    return os.path.join(_pointwise.cache_dir(), "warmup")


def record_path(name_or_path: PathLike) -> str:
    """A record's file: a path as given when it names a .json file or has a
    folder in it, else `warmup_dir()/<name>.json`."""
    text = os.fspath(name_or_path)
    if text.endswith(".json") or os.sep in text:
        return text
    return os.path.join(warmup_dir(), f"{text}.json")


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (the host driver)."""
    from triton import knobs

    return bool(knobs.runtime.interpret)


@dataclass
class Report:
    """What a warmup did. `compiled`: real Triton compilations; `cache_hits`:
    kernels Triton's on-disk cache answered; `already_loaded`: entries the
    process had compiled before; `skipped`: entries for another target or
    Triton version, or kernels this process cannot find; `failed`: (kernel,
    error) pairs."""

    action: str  # "recorded", "precompiled" or "nothing to do"
    path: Optional[str] = None
    entries: int = 0
    compiled: int = 0
    cache_hits: int = 0
    already_loaded: int = 0
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    interpreter: bool = False

    def __str__(self) -> str:
        where = f" ({self.path})" if self.path else ""
        if self.interpreter:
            return (
                f"torch_ext.warmup: Triton runs kernels in its interpreter (host driver): "
                f"nothing to compile or record{where}"
            )
        parts = [
            f"{self.entries} kernel specialisations {self.action}{where}",
            f"{self.compiled} compiled",
            f"{self.cache_hits} from Triton's cache",
        ]
        if self.action == "precompiled":
            parts.append(f"{self.already_loaded} already loaded")
            parts.append(f"{len(self.skipped)} skipped")
            parts.append(f"{len(self.failed)} failed")
        return f"torch_ext.warmup: {', '.join(parts)}, {self.seconds:.1f} s"


# -- recording ---------------------------------------------------------------


class Recording:
    """The kernel specialisations compiled while a `record()` block ran."""

    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        self.interpreter = interpreting()
        self._seen: set[tuple[str, str]] = set()

    def add(self, entry: dict[str, Any]) -> None:
        ident = (entry["kernel"], entry["specialization"])
        if ident not in self._seen:
            self._seen.add(ident)
            self.entries.append(entry)

    def save(self) -> Optional[str]:
        """Adds the entries to the record at `path` (written whole, then
        renamed into place); returns the path, or None where there is none."""
        if self.path is None or self.interpreter:
            return None
        if not self.entries and not os.path.exists(self.path):
            return None
        merged = Recording(None)
        for entry in _read(self.path) if os.path.exists(self.path) else []:
            merged.add(entry)
        for entry in self.entries:
            merged.add(entry)
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        tmp = f"{self.path}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump({"format": FORMAT, "entries": merged.entries}, f, indent=1)
        os.replace(tmp, self.path)
        return self.path


_recordings: list[Recording] = []
_hook_lock = threading.Lock()
_previous_hook: Optional[Callable[..., Any]] = None


def _describe(jit_function: Any) -> Optional[dict[str, Any]]:
    """How a later process finds `jit_function`: its `module:qualname`, and
    for a generated pointwise kernel the generator's name and key."""
    fn = getattr(jit_function, "fn", None)
    if fn is None:
        return None
    entry: dict[str, Any] = {"kernel": f"{fn.__module__}:{fn.__qualname__}"}
    from torch_ext.ops import _pointwise

    generated = _pointwise.warmup_key(fn.__globals__)
    if generated is not None:
        entry["pointwise"] = generated
    elif fn.__globals__.get("_generated_from") is not None:
        # Another generated module (multi-tensor kernels): its source, written and
        # imported again under the same name by a later process.
        entry["source"] = list(fn.__globals__["_generated_from"])
    return entry


def _target() -> Optional[dict[str, Any]]:
    from triton.runtime import driver

    target = driver.active.get_current_target()
    return {"backend": target.backend, "arch": target.arch, "warp_size": target.warp_size}


def _on_compiled(*, key: Any, repr: Any, fn: Any, compile: Any, is_manual_warmup: bool,
                 already_compiled: bool) -> Any:  # fmt: skip
    """Triton's jit_post_compile_hook: a kernel specialisation was compiled
    (or loaded from Triton's cache) for this process."""
    entry = _describe(getattr(fn, "jit_function", None))
    if entry is not None and _recordings:
        import triton

        entry["specialization"] = compile["specialization_data"]
        entry["target"] = _target()
        entry["triton"] = triton.__version__
        for rec in list(_recordings):
            rec.add(entry)
    if _previous_hook is not None:
        return _previous_hook(
            key=key, repr=repr, fn=fn, compile=compile, is_manual_warmup=is_manual_warmup,
            already_compiled=already_compiled,
        )  # fmt: skip
    return None


@contextlib.contextmanager
def record(name_or_path: Optional[PathLike] = "default") -> Iterator[Recording]:
    """Within the block, records every Triton kernel specialisation compiled
    for this process; at its end, adds them to the record `name_or_path`
    (None: keep them in the returned Recording only). Under the interpreter
    nothing is compiled, so nothing is recorded or written."""
    global _previous_hook
    from triton import knobs

    rec = Recording(None if name_or_path is None else record_path(name_or_path))
    with _hook_lock:
        if not _recordings and knobs.runtime.jit_post_compile_hook is not _on_compiled:
            _previous_hook = knobs.runtime.jit_post_compile_hook
            knobs.runtime.jit_post_compile_hook = _on_compiled
        _recordings.append(rec)
    try:
        yield rec
    finally:
        with _hook_lock:
            _recordings.remove(rec)
            if not _recordings and knobs.runtime.jit_post_compile_hook is _on_compiled:
                knobs.runtime.jit_post_compile_hook = _previous_hook
                _previous_hook = None
        rec.save()


# -- precompiling ------------------------------------------------------------


def _read(path: str) -> list[dict[str, Any]]:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"torch_ext.warmup: cannot read the record {path}: {e}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"torch_ext.warmup: {path} is not a warmup record ({FORMAT})")
    return list(data.get("entries", []))


def _resolve(entry: dict[str, Any]) -> Any:
    """The JITFunction an entry names, in this process."""
    from triton.runtime.jit import JITFunction

    from torch_ext.ops import _pointwise

    generated = entry.get("pointwise")
    if generated is not None:
        return _pointwise.kernel_for_warmup(generated)
    module_name, _, qualname = entry["kernel"].partition(":")
    if entry.get("source") is not None:
        stem, source = entry["source"]
        obj: Any = _pointwise.load_generated(source, stem)
    else:
        obj = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    while not isinstance(obj, JITFunction) and getattr(obj, "fn", None) is not None:
        obj = obj.fn  # an autotuner, heuristics or a wrapper around the JIT function
    if not isinstance(obj, JITFunction):
        raise LookupError(f"{entry['kernel']} is not a Triton JIT function")
    return obj


def _record_paths(names: Optional[Sequence[PathLike]]) -> list[str]:
    if names:
        return [record_path(n) for n in names]
    folder = warmup_dir()
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".json"))


def precompile(
    names: Optional[Sequence[PathLike]] = None, workers: Optional[int] = None, load: bool = True
) -> Report:
    """Compiles (or loads from Triton's cache) every kernel specialisation
    in the records `names` (default: all records in `warmup_dir()`) on
    `workers` threads, and (`load`) loads them onto the current device."""
    paths = _record_paths(names)
    if interpreting():  # nothing to compile; the records need not exist
        return Report("nothing to do", path=", ".join(paths) or None, interpreter=True)
    entries = [e for p in paths for e in _read(p)]
    report = Report("precompiled", path=", ".join(paths) or None, entries=len(entries))
    start, before = time.perf_counter(), compile_cache.compile_stats()
    jobs = _plan(entries, report)
    kernels = _compile_all(jobs, workers, report)
    for kernel in kernels if load else ():  # load the binaries now, on this thread's context
        try:
            kernel._init_handles()
        except Exception as e:  # noqa: BLE001  reported, the kernel compiles again when used
            report.failed.append((getattr(kernel, "name", "?"), f"loading: {e}"))
    after = compile_cache.compile_stats()
    report.compiled = after["compiled"] - before["compiled"]
    report.cache_hits = after["cache_hits"] - before["cache_hits"]
    report.seconds = time.perf_counter() - start
    return report


def _plan(entries: list[dict[str, Any]], report: Report) -> list[tuple[Any, str]]:
    """(JITFunction, specialisation) of each entry to compile here."""
    import triton
    from triton.runtime import driver

    target, device = _target(), driver.active.get_current_device()
    jobs, seen = [], set()
    for entry in entries:
        name = entry.get("kernel", "?")
        if entry.get("target") != target or entry.get("triton") != triton.__version__:
            report.skipped.append(f"{name}: recorded for {entry.get('target')}, Triton "
                                  f"{entry.get('triton')}")  # fmt: skip
            continue
        try:
            fn = _resolve(entry)
        except Exception as e:  # noqa: BLE001  a kernel this process does not have
            report.skipped.append(f"{name}: {type(e).__name__}: {e}")
            continue
        spec = entry["specialization"]
        key = json.loads(spec)["key"]
        kernel_cache = fn.device_caches[device][0]  # created here, not on a worker thread
        if key in kernel_cache or (id(fn), key) in seen:
            report.already_loaded += 1
            continue
        seen.add((id(fn), key))
        jobs.append((fn, _portable(spec)))
    return jobs


def _portable(spec: str) -> str:
    """The specialisation with the recording install's library paths
    (libdevice) dropped where this install lacks them: Triton then fills in
    its own, whose content (which its cache keys hash) is the same for the
    same Triton version."""
    data = json.loads(spec)
    libs = data.get("options", {}).get("extern_libs")
    if not libs or all(os.path.exists(path) for _, path in libs):
        return spec
    del data["options"]["extern_libs"]
    return json.dumps(data)


def _compile_all(jobs: list[tuple[Any, str]], workers: Optional[int], report: Report) -> list[Any]:
    from triton.runtime import driver

    device = driver.active.get_current_device()

    def one(job: tuple[Any, str]) -> Any:
        fn, spec = job
        try:
            driver.active.set_current_device(device)
            return fn.preload(spec)
        except Exception as e:  # noqa: BLE001  reported per kernel
            report.failed.append((fn._fn_name if hasattr(fn, "_fn_name") else str(fn), str(e)))
            return None

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = workers if workers is not None else min(8, cpus or 1)
    if workers <= 1 or len(jobs) <= 1:
        results = [one(job) for job in jobs]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="torch_ext_warmup") as pool:
            results = list(pool.map(one, jobs))
    return [k for k in results if k is not None]


def warmup(
    target: Union[None, PathLike, Sequence[PathLike], Callable[..., Any]] = None,
    *args: Any,
    record_as: Optional[PathLike] = "default",
    workers: Optional[int] = None,
    **kwargs: Any,
) -> Report:
    """`warmup(fn, *args, **kwargs)`: calls fn(*args, **kwargs) once,
    recording its kernels into the record `record_as` (a name in
    `warmup_dir()` or a .json path). `warmup()`, `warmup("name")`,
    `warmup(["a", "b.json"])`: precompiles the records (default: all in
    `warmup_dir()`) on `workers` threads. Returns a Report; `print` it."""
    if callable(target):
        start, before = time.perf_counter(), compile_cache.compile_stats()
        with record(record_as) as rec:
            target(*args, **kwargs)
        after = compile_cache.compile_stats()
        return Report(
            "recorded",
            path=rec.path if not rec.interpreter else None,
            entries=len(rec.entries),
            compiled=after["compiled"] - before["compiled"],
            cache_hits=after["cache_hits"] - before["cache_hits"],
            seconds=time.perf_counter() - start,
            interpreter=rec.interpreter,
        )
    if args or kwargs:
        raise TypeError("torch_ext.warmup: arguments are for a callable to record")
    if target is None:
        names = None
    elif isinstance(target, (str, os.PathLike)):
        names = [target]
    else:
        names = list(target)
    return precompile(names, workers=workers)


def _main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse
    import runpy

    parser = argparse.ArgumentParser(
        prog="python -m torch_ext.warmup",
        description="Precompile recorded Triton kernels of torch_ext models ahead of their "
        "first call, or record them by running a script once. Records live in "
        "<TORCH_EXT_CACHE_DIR>/warmup (see torch_ext/warmup.py).",
    )
    parser.add_argument(
        "records",
        nargs="*",
        help="record names (in the warmup folder) or .json paths to precompile "
        "(default: every record in the warmup folder)",
    )
    parser.add_argument(
        "-j", "--workers", type=int, default=None, help="compile threads (default: min(8, cores))"
    )
    parser.add_argument(
        "--record",
        nargs=argparse.REMAINDER,
        metavar="NAME SCRIPT [ARGS]",
        help="instead of precompiling: run SCRIPT with ARGS once and record its kernels as "
        "NAME (everything after --record belongs to it)",
    )
    parser.add_argument("--list", action="store_true", help="list the records and their sizes")
    args = parser.parse_args(argv)

    import torch_ext  # noqa: F401  the driver, and Triton's compilation listener

    if args.list:
        for path in _record_paths(args.records):
            print(f"{path}: {len(_read(path))} kernel specialisations")
        return 0
    if args.record is not None:
        if len(args.record) < 2:
            parser.error("--record needs a NAME and a SCRIPT to run")
        name, script = args.record[0], args.record[1:]
        sys.argv = script
        report = warmup(lambda: runpy.run_path(script[0], run_name="__main__"), record_as=name)
    else:
        report = precompile(args.records, workers=args.workers)
    print(report)
    for name, error in report.failed:
        print(f"  failed: {name}: {error}", file=sys.stderr)
    return 1 if report.failed else 0


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        return warmup(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(_main())
