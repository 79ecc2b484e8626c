"""python -m codegen --manifest musa_functions.yaml --out build/generated
python -m codegen --list            # each entry: mode, meta class, impl class, body
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from . import gen, kernels
from .manifest import ManifestError, load
from .model import Scan, resolve

ROOT = Path(__file__).resolve().parent.parent


def kernel_registry() -> list[str]:
    """The kernel names declared in torch_ext/ops (read from the source, not imported)."""
    return sorted(kernels.declared())


def kernel_exists(name: str) -> bool:
    return kernels.exists(name)


def generate(manifest: str, out: str, namespace: str, csrc_dirs: list[str]) -> list:
    entries = load(manifest)
    ops = resolve(entries, namespace, Scan(csrc_dirs), kernel_exists)
    # Base classes for Customized meta classes (structured_inherits) live in
    # aten/MetaBases.h of a hand-written folder.
    bases = [Path(d).resolve() / "aten" / "MetaBases.h" for d in csrc_dirs]
    bases = next((str(b) for b in bases if b.exists()), None)
    # Each shard includes only its own ops' declarations, so that an entry added or
    # changed recompiles its shard, not all of them; hand-written C++ includes its ops'
    # own headers (or HEADER, all of them).
    files = {gen.HEADER: gen.emit_umbrella()}
    aten_ops = [o for o in ops if o.mode != "New"]
    for i in range(gen.SHARDS):
        part = [o for o in aten_ops if gen.shard_of(o) == i]
        own = [o for o in part if o.handwritten]
        for o in own:
            assert gen.op_header(o) not in files, f"two hand-written ops named {o.kernel}"
            files[gen.op_header(o)] = gen.emit_header([o], namespace, bases)
        rest = [o for o in part if not o.handwritten]
        own_headers = tuple(gen.op_header(o) for o in own)
        files[gen.shard_header(i)] = gen.emit_header(rest, namespace, bases, own_headers)
        files[f"RegisterPrivateUse1_{i}.cpp"] = gen.emit_shard(part, namespace, gen.shard_header(i))
    new_ops = [o for o in ops if o.mode == "New"]
    files[gen.NEW_HEADER] = gen.emit_header(new_ops, namespace, bases)
    if new_ops:
        files["RegisterTorchExtOps.cpp"] = gen.emit_new_ops(new_ops, namespace)
    _write_all(Path(out), files)
    return ops


def _write_all(out: Path, files: dict[str, str]) -> None:
    """Everything is rendered before anything is written; unchanged files keep
    their timestamps so that only changed shards recompile."""
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = out / name
        if path.exists() and path.read_text() == text:
            continue
        fd, tmp = tempfile.mkstemp(dir=out, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    for stale in out.iterdir():
        if stale.is_file() and stale.name not in files:
            stale.unlink()


def print_list(ops) -> None:
    rows = [("entry", "line", "mode", "meta class", "impl class / kernel", "body")]
    for o in ops:
        rows.append(
            (
                o.name,
                str(o.line),
                o.mode,
                o.meta_class or "-",
                o.impl_class or o.kernel,
                o.body_source(),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    modes = {}
    for o in ops:
        modes[o.mode] = modes.get(o.mode, 0) + 1
    print(f"\n{len(ops)} entries: " + ", ".join(f"{k} {v}" for k, v in sorted(modes.items())))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m codegen",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--manifest", default=str(ROOT / "musa_functions.yaml"))
    ap.add_argument("--out", help="folder for the generated C++")
    ap.add_argument(
        "--namespace", default="at::musa", help="C++ namespace of our structured classes"
    )
    ap.add_argument("--csrc", action="append", help="hand-written C++ folder(s) (default: csrc/)")
    ap.add_argument("--list", action="store_true", help="print each entry's mode, classes and body")
    a = ap.parse_args(argv)
    csrc = a.csrc or [str(ROOT / "csrc")]
    try:
        if a.out:
            ops = generate(a.manifest, a.out, a.namespace, csrc)
        else:
            ops = resolve(load(a.manifest), a.namespace, Scan(csrc), kernel_exists)
    except ManifestError as e:
        print(f"codegen: error: {e}", file=sys.stderr)
        return 1
    if a.list:
        print_list(ops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
