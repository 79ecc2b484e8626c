"""Helpers for the generator's tests: run `python -m codegen` in-process (fast,
kernel registry monkeypatched) or as a subprocess (the real CLI and registry).
No C++ is compiled here."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import codegen.__main__ as cg_main  # noqa: E402

# Kernel names the in-process tests pretend are declared in torch_ext/ops.
FAKE_KERNELS = {
    "lerp_scalar",
    "lerp_tensor",
    "add",
    "mul",
    "tril",
    "layer_norm",
    "add_rms_norm",
    "add_rms_norm_meta",
    "stats_update",
    "stats_update_meta",
}


@dataclass
class Result:
    rc: int
    out: str
    err: str
    outdir: Path
    manifest: Path

    def files(self) -> dict[str, str]:
        return {p.name: p.read_text() for p in sorted(self.outdir.iterdir()) if p.is_file()}

    def header(self) -> str:
        """Every generated declaration: the headers that MusaFunctions.h includes."""
        files = self.files()
        return "\n".join(t for n, t in files.items() if n.startswith("MusaFunctions_"))

    def all_text(self) -> str:
        return "\n".join(self.files().values())

    def nonempty_shards(self) -> list[str]:
        return [
            t
            for n, t in self.files().items()
            if n.startswith("RegisterPrivateUse1_") and "m.impl(" in t
        ]


def write_manifest(tmp_path: Path, text: str, name: str = "musa_functions.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text).lstrip("\n"))
    return p


def make_csrc(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    """A hand-written C++ folder (csrc/) for --csrc; empty unless files are given."""
    d = tmp_path / "csrc"
    (d / "aten").mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(textwrap.dedent(text))
    return d


@pytest.fixture
def fake_kernels(monkeypatch):
    """Pretend FAKE_KERNELS (and importable 'module:attr' names) exist."""
    real = cg_main.kernel_exists

    def exists(name: str) -> bool:
        if ":" in name:
            return real(name)
        return name in FAKE_KERNELS

    monkeypatch.setattr(cg_main, "kernel_exists", exists)
    return FAKE_KERNELS


@pytest.fixture
def codegen(tmp_path, capsys, fake_kernels):
    """codegen(manifest_text, csrc=None, out=None, extra=()) -> Result, in-process."""

    def run(
        text: str,
        csrc: Path | None = None,
        out: Path | None = None,
        extra: tuple[str, ...] = (),
        list_only: bool = False,
    ) -> Result:
        manifest = write_manifest(tmp_path, text)
        csrc = csrc or make_csrc(tmp_path)
        out = out or tmp_path / "out"
        argv = ["--manifest", str(manifest), "--csrc", str(csrc), *extra]
        argv += ["--list"] if list_only else ["--out", str(out)]
        capsys.readouterr()
        rc = cg_main.main(argv)
        cap = capsys.readouterr()
        return Result(rc, cap.out, cap.err, out, manifest)

    return run


def run_cli(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def real_kernel_names() -> list[str]:
    """Names declared in torch_ext/ops, read at test time."""
    return sorted(cg_main.kernel_registry())


def squash(s: str) -> str:
    """Whitespace runs as one space: generated C++ compared line-break-blind."""
    return " ".join(s.split())
