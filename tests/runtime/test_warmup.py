"""torch_ext.compile_stats(), the compile progress line and torch_ext.warmup.

The host driver runs kernels in Triton's interpreter, which compiles nothing.
Triton's compiler itself runs without a GPU, though: these tests compile real
kernels for an sm_90 target (Triton's compiler and ptxas) through a Triton
driver that only compiles (`_COMPILE_ONLY`, in subprocesses), so the counters,
Triton's on-disk cache, records and precompiling are all exercised; loading
and launching the binaries is left to tests_gpu/test_warmup.py.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import torch_ext
from torch_ext import compile_cache

REPO = Path(__file__).resolve().parents[2]

_KERNEL_MODULE = """
import triton
import triton.language as tl


@triton.jit
def scale(x, y, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + i, tl.load(x + i, mask=i < n) * FACTOR, mask=i < n)
"""

# A process whose Triton compiles for sm_90 and launches nothing. Triton's
# language modules are imported before torch_ext (which turns the
# interpreter on under the host driver), then the interpreter is turned off.
_COMPILE_ONLY = """
import json, os, sys
import triton.experimental.gluon  # noqa: F401
import torch
import torch_ext
os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, os.path.join(os.environ["PYTHONPATH"], "tests_gpu", "harness"))
import compile_only
compile_only.use()
sys.path.insert(0, sys.argv[1])
import kmod

x, y = torch.empty(64), torch.empty(64)


def run(factor):
    kmod.scale.warmup(x, y, 64, FACTOR=factor, BLOCK=64, grid=(1,))
"""


def test_counter_counts_real_compilations_and_cache_hits(tmp_path):
    """In a subprocess: Triton's interpreter, once it has run kernels in a
    process, leaves tl's builtins unusable for real compilations there."""
    (tmp_path / "kmod.py").write_text(_KERNEL_MODULE)
    code = """
        stats = torch_ext.compile_stats
        assert stats()["listening"]
        seen = [stats()]
        run(2.0)  # a fresh kernel: a real compilation
        seen.append(stats())
        run(2.0)  # the same: in memory, Triton's compile is not called
        seen.append(stats())
        kmod.scale.device_caches.clear()  # as a new process: Triton's disk cache answers
        run(2.0)
        seen.append(stats())
        torch_ext.reset_compile_stats()
        seen.append(stats())
        print(json.dumps(seen))
        """
    s0, s1, s2, s3, s4 = _run(tmp_path, code, "triton")
    assert (s0["compiled"], s0["cache_hits"]) == (0, 0)
    assert (s1["compiled"], s1["cache_hits"]) == (1, 0) and s1["compile_seconds"] > 0
    assert s2 == s1
    assert (s3["compiled"], s3["cache_hits"]) == (1, 1) and s3["load_seconds"] > 0
    assert (s4["compiled"], s4["cache_hits"], s4["compile_seconds"]) == (0, 0, 0.0)


class _Times:
    def __init__(self, seconds):
        self.total = int(seconds * 1e6)


def _compiled(seconds):
    compile_cache._on_compile(
        src=None, metadata={}, metadata_group={}, times=_Times(seconds), cache_hit=False
    )


def test_progress_line_while_compiling_long_and_silenced(monkeypatch, capsys):
    torch_ext.reset_compile_stats()
    monkeypatch.delenv("TORCH_EXT_COMPILE_PROGRESS", raising=False)
    _compiled(1.0)  # a burst of 1 s: no line yet
    assert capsys.readouterr().err == ""
    _compiled(4.0)  # the burst has now lasted over 3 s
    err = capsys.readouterr().err
    assert "torch_ext: compiling Triton kernels (2 so far," in err, err
    torch_ext.reset_compile_stats()
    monkeypatch.setenv("TORCH_EXT_COMPILE_PROGRESS", "0")
    _compiled(1.0)
    _compiled(4.0)
    assert capsys.readouterr().err == ""
    assert torch_ext.compile_stats()["compiled"] == 2
    monkeypatch.setenv("TORCH_EXT_COMPILE_PROGRESS", "sometimes")
    with pytest.raises(ValueError, match="TORCH_EXT_COMPILE_PROGRESS"):
        _compiled(10.0)
    torch_ext.reset_compile_stats()


def _run(tmp_path, code, triton_cache, *extra):
    env = dict(
        os.environ,
        TORCH_EXT_DRIVER="host",
        TRITON_CACHE_DIR=str(tmp_path / triton_cache),
        TORCH_EXT_CACHE_DIR=str(tmp_path / "torch_ext"),
        TORCH_EXT_COMPILE_PROGRESS="0",
        PYTHONPATH=str(REPO),
    )
    r = subprocess.run(
        [sys.executable, "-c", _COMPILE_ONLY + textwrap.dedent(code), str(tmp_path), *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_progress_line_from_real_compilations(tmp_path):
    (tmp_path / "kmod.py").write_text(_KERNEL_MODULE)
    code = """
        import io
        from torch_ext import compile_cache
        compile_cache._PROGRESS_AFTER = 0.0
        compile_cache._PROGRESS_EVERY = 0.0
        lines = []
        for factor, switch in ((2.0, "1"), (3.0, "0"), (4.0, "")):
            os.environ["TORCH_EXT_COMPILE_PROGRESS"] = switch
            sys.stderr, saved = io.StringIO(), sys.stderr
            run(factor)
            lines.append(sys.stderr.getvalue())
            sys.stderr = saved
        print(json.dumps(lines))
        """
    shown, silenced, default = _run(tmp_path, code, "triton")
    # (stderr may also hold Triton's own warnings)
    assert "torch_ext: compiling Triton kernels (1 so far, " in shown, shown
    assert "torch_ext:" not in silenced, silenced
    assert "torch_ext: compiling Triton kernels (3 so far, " in default, default


def test_record_then_a_second_process_compiles_nothing(tmp_path):
    (tmp_path / "kmod.py").write_text(_KERNEL_MODULE)
    first = _run(
        tmp_path,
        """
        report = torch_ext.warmup(lambda: (run(2.0), run(3.0), run(2.0)), record_as="model")
        print(json.dumps([report.entries, report.compiled, torch_ext.compile_stats()]))
        """,
        "triton",
    )
    entries, compiled, stats = first
    assert entries == 2 and compiled == 2 and stats["compiled"] == 2
    record = json.loads((tmp_path / "torch_ext" / "warmup" / "model.json").read_text())
    assert [e["kernel"] for e in record["entries"]] == ["kmod:scale", "kmod:scale"]

    # Same Triton cache: the precompile loads both from it; the "model" then
    # finds them in memory and compiles nothing at all.
    code = """
        report = torch_ext.warmup.precompile(["model"], load=False)
        mid = torch_ext.compile_stats()
        run(2.0); run(3.0)
        print(json.dumps([report.compiled, report.cache_hits, report.failed, report.skipped,
                          mid, torch_ext.compile_stats()]))
        """
    compiled, hits, failed, skipped, mid, end = _run(tmp_path, code, "triton")
    assert (compiled, hits, failed, skipped) == (0, 2, [], [])
    assert end["compiled"] == 0 and end["cache_hits"] == mid["cache_hits"] == 2

    # A fresh Triton cache: precompiling compiles both (two threads), the run nothing.
    compiled, hits, failed, skipped, mid, end = _run(
        tmp_path, code.replace('["model"], load', '["model"], workers=2, load'), "fresh"
    )
    assert (compiled, hits, failed, skipped) == (2, 0, [], [])
    assert end == mid and end["compiled"] == 2


def test_generated_kernels_are_made_again_from_the_record(tmp_path):
    """A kernel whose module torch_ext generated (multi-tensor kernels: not importable by
    name) is written and imported again from the source its record carries."""
    code = """
        from torch_ext.ops import _pointwise
        gen = _pointwise.load_generated(open(sys.argv[1] + "/kmod.py").read(), "gen_scale")
        kmod.scale = gen.scale
        report = torch_ext.warmup(lambda: run(2.0), record_as="gen")
        print(json.dumps([report.entries, report.compiled, gen.__name__, gen.__file__]))
        """
    (tmp_path / "kmod.py").write_text(_KERNEL_MODULE)
    entries, compiled, name, path = _run(tmp_path, code, "triton")
    assert (entries, compiled) == (1, 1) and name.startswith("torch_ext_gen_gen_scale_")
    os.remove(path)  # precompiling must not need the generated file
    code = """
        r = torch_ext.warmup.precompile(["gen"], load=False)
        print(json.dumps([r.entries, r.compiled, r.failed, r.skipped]))
        """
    assert _run(tmp_path, code, "fresh") == [1, 1, [], []]
    assert os.path.exists(path)  # written again, under its name


def test_records_for_another_target_are_skipped_and_library_paths_are_local(tmp_path):
    (tmp_path / "kmod.py").write_text(_KERNEL_MODULE)
    _run(tmp_path, 'torch_ext.warmup(lambda: (run(2.0), run(3.0)), record_as="m"); print(1)', "tc")
    path = tmp_path / "torch_ext" / "warmup" / "m.json"
    record = json.loads(path.read_text())
    record["entries"][0]["target"]["arch"] = 80
    # Recorded by another install: its libdevice path does not exist here.
    spec = json.loads(record["entries"][1]["specialization"])
    spec["options"]["extern_libs"] = [["libdevice", "/elsewhere/libdevice.10.bc"]]
    record["entries"][1]["specialization"] = json.dumps(spec)
    path.write_text(json.dumps(record))
    code = """
        r = torch_ext.warmup.precompile(["m"], load=False)
        print(json.dumps([r.entries, r.compiled, r.cache_hits, r.skipped, r.failed]))
        """
    entries, compiled, hits, skipped, failed = _run(tmp_path, code, "tc")
    assert (entries, compiled, hits, failed) == (2, 0, 1, [])
    assert len(skipped) == 1 and "'arch': 80" in skipped[0]


def test_host_driver_warmup_is_a_reported_no_op(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXT_CACHE_DIR", str(tmp_path))
    import torch

    x = torch.ones(8, device="privateuseone")
    report = torch_ext.warmup(lambda: (x * 3).cpu(), record_as="host")
    if torch_ext.driver_name() != "host":  # tests/ on a GPU: a real recording
        assert not report.interpreter and "recorded" in str(report)
        return
    assert report.interpreter and report.compiled == 0
    assert "interpreter" in str(report) and "nothing to compile" in str(report)
    assert not (tmp_path / "warmup" / "host.json").exists()
    assert torch_ext.warmup().interpreter
    assert torch_ext.warmup("host").interpreter


def test_bad_record_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(torch_ext.warmup, "interpreting", lambda: False)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="is not a warmup record"):
        torch_ext.warmup(str(bad))
    with pytest.raises(ValueError, match="cannot read the record"):
        torch_ext.warmup(str(tmp_path / "missing.json"))
    with pytest.raises(TypeError, match="arguments are for a callable"):
        torch_ext.warmup("name", 1)


def test_cli_help_and_host_no_op(tmp_path):
    env = dict(os.environ, TORCH_EXT_DRIVER="host", TORCH_EXT_CACHE_DIR=str(tmp_path))
    r = subprocess.run(
        [sys.executable, "-m", "torch_ext.warmup", "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage: python -m torch_ext.warmup" in r.stdout and "--record" in r.stdout
    script = tmp_path / "model.py"
    script.write_text(
        "import torch, sys\nprint((torch.ones(2, device='privateuseone') + 1).sum())\n"
    )
    for args in ([], ["--record", "m", str(script)]):
        r = subprocess.run(
            [sys.executable, "-m", "torch_ext.warmup", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        assert "nothing to compile" in r.stdout
        assert "RuntimeWarning" not in r.stderr
