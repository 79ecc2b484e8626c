"""Every environment variable torch_ext reads, in one table.

Each variable has a type, a default, a line of documentation and the places
that read it. Python code reads a variable only through `get(name)`, which
parses it on every call (callers that decide once keep the answer) and raises
`ConfigError` naming the variable for a bad value. C++ reads the run-time
variables in `csrc/runtime/Config.cpp` only, with the same defaults and
parsing; `torch_ext._C._config()` returns that side's values and
tests/runtime/test_config.py checks that both sides agree. The README's
configuration table is `markdown_table()`'s output.

This module imports nothing from torch_ext, so setup.py and the code
generator can load it before the extension is built.
"""

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = ["ConfigError", "Variable", "VARIABLES", "get", "values", "markdown_table"]


class ConfigError(ValueError):
    """A configuration variable has a value torch_ext cannot use."""


def _choice(*allowed: str) -> Callable[[str, str], str]:
    def parse(name: str, text: str) -> str:
        if text not in allowed:
            raise ConfigError(
                f"{name} must be {', '.join(allowed[:-1])} or {allowed[-1]}, got '{text}'"
            )
        return text

    return parse


def _bool(name: str, text: str) -> bool:
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be 0 or 1, got '{text}'")


def _devices(name: str, text: str) -> int:
    # Digits only (int() would also take spaces, signs, "_" and non-ASCII digits).
    n = int(text) if re.fullmatch(r"[0-9]{1,2}", text) else 0
    if not 1 <= n <= 64:
        raise ConfigError(f"{name} must be 1..64, got '{text}'")
    return n


_SCALE = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_BYTES = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([KkMmGgTt]?)")


def parse_bytes(name: str, text: str) -> int:
    """'512M' -> 536870912 (suffixes K, M, G, T: powers of 1024), as C++ parses
    it: digits with an optional fraction, no sign, space, exponent or '_'."""
    match = _BYTES.fullmatch(text)
    if match is None:
        raise ConfigError(
            f"{name}: cannot parse '{text}' as a number of bytes "
            "(e.g. 4096, 512M, 2G; suffixes K, M, G, T)"
        )
    return int(float(match[1]) * _SCALE[match[2].lower()])


def _int(name: str, text: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        raise ConfigError(f"{name} must be a positive integer, got '{text}'") from None
    if n < 1:
        raise ConfigError(f"{name} must be a positive integer, got '{text}'")
    return n


def _text(name: str, text: str) -> str:
    return text


@dataclass(frozen=True)
class Variable:
    name: str
    kind: str  # "run" (the package), "build" (setup.py, codegen), "test"
    type: str  # shown in the README
    default: Optional[str]  # the text used when unset or empty; None: no value
    default_doc: str  # the default as the README says it
    doc: str
    readers: tuple[str, ...]  # the files that read it (through this module)
    parse: Callable[[str, str], Any] = _text
    in_cpp: bool = False  # also read by csrc/runtime/Config.cpp


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "TORCH_EXT_DRIVER",
        "run",
        "choice",
        "auto",
        "`auto`",
        "`host`, `cuda`, or `auto` (cuda where `libcuda.so.1` and a GPU are present). "
        "Without the built extension (standalone kernel tests) `auto` means host",
        ("csrc/runtime/Driver.cpp", "torch_ext/backends/__init__.py"),
        _choice("auto", "host", "cuda"),
        in_cpp=True,
    ),
    Variable(
        "TORCH_EXT_FALLBACK",
        "run",
        "choice",
        "warn",
        "`warn`",
        "ops without a native kernel: `warn` (once per op) and run on CPU, `silent`, "
        "or `error` (raise naming the op); `torch_ext.fallback_mode()` changes it at run time",
        ("csrc/aten/Fallback.cpp",),
        _choice("warn", "silent", "error"),
        in_cpp=True,
    ),
    Variable(
        "TORCH_EXT_HOST_DEVICES",
        "run",
        "int 1..64",
        "1",
        "`1`",
        "number of simulated devices of the host driver",
        ("csrc/runtime/HostDriver.cpp",),
        _devices,
        in_cpp=True,
    ),
    Variable(
        "TORCH_EXT_HOST_MEMORY_LIMIT",
        "run",
        "bytes",
        None,
        "unlimited (physical memory)",
        "per-device memory of the host driver, bytes (`512M`, `2G`; K/M/G/T are powers of 1024)",
        ("csrc/runtime/HostDriver.cpp",),
        parse_bytes,
        in_cpp=True,
    ),
    Variable(
        "TORCH_EXT_HOST_PROTECT",
        "run",
        "bool",
        "0",
        "`0`",
        "`1`: device memory is not readable by host code except through the runtime "
        "(`mprotect`), so a stray host read crashes",
        ("csrc/runtime/HostDriver.cpp",),
        _bool,
        in_cpp=True,
    ),
    Variable(
        "TORCH_EXT_FAST_LAUNCH",
        "run",
        "bool",
        "1",
        "`1`",
        "`0` runs every op's Python on every call instead of replaying its launch "
        "plan from C++ (both drivers; csrc/launch/Plan.h)",
        ("csrc/launch/Plan.cpp",),
        _bool,
        in_cpp=True,
    ),
    Variable(
        "TORCH_EXT_COMPILE_PROGRESS",
        "run",
        "bool",
        "1",
        "`1`",
        "`0` silences the line on stderr that counts Triton compilations while a first "
        "call compiles for more than a few seconds (`torch_ext.compile_stats()` counts them)",
        ("torch_ext/compile_cache.py",),
        _bool,
    ),
    Variable(
        "TORCH_EXT_ATTENTION_DROPOUT_MASK",
        "run",
        "choice",
        "auto",
        "`auto`",
        "the fused attention's dropout mask: the forward keeps it (2 bits a query-key "
        "pair) for the backward, which reads it instead of drawing its Philox numbers "
        "again: under `auto` where the driver finds that faster (cuda: heads of more than "
        "128 bytes, e.g. bf16 head 128) and it takes no more memory than q, k, v and out "
        "(up to 4096 keys at bf16 head 128), under `keep` always; `regenerate`: the "
        "backward draws the mask again; the mask is the same either way",
        ("torch_ext/ops/attention.py",),
        _choice("auto", "keep", "regenerate"),
    ),
    Variable(
        "TORCH_EXT_AUTOTUNE",
        "run",
        "choice",
        "auto",
        "`auto`",
        "configurations of convolutions (tiles, reduction splits, kernel choices; implicit "
        "GEMM, depthwise) and tiles of fp16/bf16 "
        "matrix products of at least 256 per dimension (or 2**27 multiply-adds) timed on first "
        "use and remembered "
        "across processes (in `<TORCH_EXT_CACHE_DIR>/autotune/`): `auto` on the cuda driver, `on` "
        "on any driver, `off` never (the heuristic's choice); nothing is timed under "
        "`torch.use_deterministic_algorithms(True)`",
        ("torch_ext/ops/_tune.py",),
        _choice("auto", "on", "off"),
    ),
    Variable(
        "TORCH_EXT_COMPILE_THREADS",
        "run",
        "int",
        None,
        "CPUs, at most 8",
        "threads that compile a tuned op's candidate configurations side by side before "
        "they are timed (`1`: one after another)",
        ("torch_ext/ops/_tune.py",),
        _int,
    ),
    Variable(
        "TORCH_EXT_CACHE_DIR",
        "run",
        "path",
        None,
        "`~/.cache/torch_ext/pointwise`",
        "where generated pointwise kernels are written, `torch_ext.warmup`'s records "
        "(in its `warmup/` folder) and tuned tile configurations (`autotune/`)",
        ("torch_ext/ops/_pointwise.py", "torch_ext/warmup.py", "torch_ext/ops/_tune.py"),
    ),
    Variable(
        "TORCH_EXT_MANIFEST",
        "build",
        "path",
        None,
        "`musa_functions.yaml`",
        "build with another manifest",
        ("setup.py",),
    ),
    Variable(
        "TORCH_EXT_EXTRA_CSRC",
        "build",
        "path",
        None,
        "—",
        "build with an extra folder of hand-written C++",
        ("setup.py",),
    ),
    Variable(
        "TORCH_EXT_NAMESPACE",
        "build",
        "text",
        "at::musa",
        "`at::musa`",
        "C++ namespace of the backend's generated and hand-written classes "
        "(the CMake cache variable of the same name; C++ spells it `TORCH_EXT_NAMESPACE`)",
        ("setup.py", "torch_ext/coverage.py"),
    ),
    Variable(
        "TORCH_EXT_BUILD_DIR",
        "build",
        "path",
        None,
        "`build`",
        "CMake build folder",
        ("setup.py",),
    ),
    Variable(
        "TORCH_EXT_BUILD_TYPE",
        "build",
        "text",
        "Release",
        "`Release`",
        "CMake build type (`Debug`, `RelWithDebInfo`, ...)",
        ("setup.py",),
    ),
    Variable(
        "TORCH_EXT_GLUE_OPT",
        "build",
        "text",
        "-O1",
        "`-O1`",
        "compiler optimisation flag of the generated registration shards (`-O3`: as the "
        "rest of a Release build)",
        ("setup.py",),
    ),
    Variable(
        "MAX_JOBS",
        "build",
        "int",
        None,
        "cores",
        "parallel compile jobs",
        ("setup.py",),
        _int,
    ),
    Variable(
        "TORCH_EXT_TORCH_VERSION",
        "build",
        "text",
        "2.13.0",
        "`2.13.0`",
        "the torch `scripts/setup.sh` installs where none is installed",
        ("scripts/setup.sh",),
    ),
    Variable(
        "TEST_WORKERS",
        "test",
        "text",
        None,
        "`2`",
        "processes `scripts/test.sh` runs the suite in (pytest-xdist's `-n`; `auto`: one per "
        "core, the default of `tests_gpu/run_all.sh`)",
        ("scripts/test.sh", "tests_gpu/run_all.sh"),
    ),
    Variable(
        "TORCH_EXT_TEST_DEVICE",
        "test",
        "choice",
        "cpu",
        "`cpu`",
        "tests/ops: run the kernels on CPU tensors in the interpreter (`cpu`), on "
        "`privateuseone`, or on torch's `cuda`",
        ("tests/ops/conftest.py",),
        _choice("cpu", "privateuseone", "cuda"),
    ),
    Variable(
        "TORCH_EXT_TEST_SHARD",
        "test",
        "text",
        None,
        "—",
        "`i/n`: run every n-th collected test from the i-th, one of n shards of what pytest "
        "collected (a long GPU run in several calls)",
        ("tests/conftest.py",),
    ),
    Variable(
        "ZOO_REPORT",
        "test",
        "text",
        None,
        "—",
        "a file: the model zoo's tests (tests/models/test_zoo.py, tests_gpu/test_torchvision.py) "
        "append a row per model to it; `python tests/models/zoo_table.py FILE` prints the table",
        ("tests/models/zoo_table.py",),
    ),
    Variable(
        "TRITON_INTERPRET",
        "run",
        "bool",
        None,
        "set by torch_ext",
        "Triton's own switch, not read by torch_ext: `import torch_ext` sets it to `1` "
        "under the host driver (kernels run in Triton's interpreter)",
        ("torch_ext/__init__.py",),
    ),
)

_BY_NAME = {v.name: v for v in VARIABLES}


def variable(name: str) -> Variable:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name} is not a torch_ext configuration variable") from None


def get(name: str) -> Any:
    """The parsed value of `name` now; its default where unset or empty (None
    where the default has no value: the reader decides)."""
    var = variable(name)
    text = os.environ.get(name, "")
    if text == "":
        text = var.default
    return None if text is None else var.parse(name, text)


def values(kind: Optional[str] = None, in_cpp: Optional[bool] = None) -> dict[str, Any]:
    """{name: parsed value} of the variables of `kind` (all by default)."""
    return {
        v.name: get(v.name)
        for v in VARIABLES
        if (kind is None or v.kind == kind) and (in_cpp is None or v.in_cpp == in_cpp)
    }


def markdown_table() -> str:
    """The README's table: `python -c "import torch_ext.config as c; print(c.markdown_table())"`."""
    rows = [
        "| variable | when | default | effect |",
        "|---|---|---|---|",
    ]
    for v in VARIABLES:
        rows.append(f"| `{v.name}` | {v.kind} | {v.default_doc} | {v.doc} |")
    return "\n".join(rows)
