"""python -m torch_ext.coverage: every aten overload with a PrivateUse1 kernel.

For each overload registered for PrivateUse1 it prints the mode (Legacy,
LegacyMeta, Customized, Plain from the manifest; core for the runtime's
hand-written C++ ops), the kernel, and whether the last test run
(`bash scripts/test.sh`, which records the overloads its tests ran on the
device into build/op_coverage.txt) called it on device tensors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RECORD = ROOT / "build" / "op_coverage.txt"


def registered_overloads() -> list[str]:
    names = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    return sorted(n[len("aten::") :] for n in names if n.startswith("aten::"))


def manifest_modes() -> dict[str, tuple[str, str]]:
    """aten overload -> (mode, kernel description) from the manifest."""
    from codegen.__main__ import kernel_exists
    from codegen.manifest import load
    from codegen.model import Scan, resolve

    from torch_ext import config

    namespace = config.get("TORCH_EXT_NAMESPACE")
    ops = resolve(
        load(ROOT / "musa_functions.yaml"), namespace, Scan([str(ROOT / "csrc")]), kernel_exists
    )
    out: dict[str, tuple[str, str]] = {}
    for op in ops:
        if op.mode == "New":
            continue
        if op.mode == "Legacy":
            kernel = ", ".join(f"{s}:{k}" for s, k in op.stubs.items()) or "stub (other entry)"
        elif op.handwritten:
            kernel = f"C++ {op.impl_class}"
        else:
            kernel = f"triton:{op.triton}"
        for f in op.functions:
            out[str(f.func.name)] = (op.mode, kernel)
    return out


def _parse(report: str) -> dict[str, int]:
    calls: dict[str, int] = {}
    for line in report.splitlines():
        name, _, n = line.rpartition(" ")
        calls[name] = int(n)
    return calls


def device_calls() -> dict[str, int]:
    """Operator ("aten::add.Tensor") -> calls on device tensors since the
    recorder was started (this starts it)."""
    torch.ops.torch_ext._coverage_start()
    return _parse(torch.ops.torch_ext._coverage_report())


def calls_during(fn: Callable[[], object]) -> dict[str, int]:
    """The operators `fn()` called on device tensors, with their counts."""
    before = device_calls()
    fn()
    after = device_calls()
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


def recorded_calls(path: Path) -> dict[str, int]:
    if not path.exists():
        return {}
    return {name.removeprefix("aten::"): n for name, n in _parse(path.read_text()).items()}


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m torch_ext.coverage", description=__doc__)
    ap.add_argument("--record", type=Path, default=DEFAULT_RECORD)
    ap.add_argument("--quiet", action="store_true", help="totals only")
    a = ap.parse_args(argv)
    import torch_ext  # noqa: F401  registers the kernels

    modes = manifest_modes()
    calls = recorded_calls(a.record)
    rows, totals, tested = [], {}, 0
    for name in registered_overloads():
        mode, kernel = modes.get(name, ("core", "C++ csrc/aten"))
        n = calls.get(name, 0)
        tested += n > 0
        totals[mode] = totals.get(mode, 0) + 1
        rows.append((name, mode, kernel, f"yes ({n})" if n else "no"))
    if not a.quiet:
        w = [
            max(len(r[i]) for r in rows + [("overload", "mode", "kernel", "tested")])
            for i in range(3)
        ]
        print(f"{'overload':<{w[0]}}  {'mode':<{w[1]}}  {'kernel':<{w[2]}}  tested")
        for r in rows:
            print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}")
    if not calls:
        print(f"\n(no test record at {a.record}: run `bash scripts/test.sh` first)")
    print(
        f"\n{len(rows)} aten overloads with a PrivateUse1 kernel: "
        + ", ".join(f"{k} {v}" for k, v in sorted(totals.items()))
        + f"; {tested} called on the device by the tests"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
