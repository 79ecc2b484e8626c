"""CI smoke of `python -m bench models`: the tiny configuration (2 steps,
2-layer models) on privateuseone (the host driver here) against torch on the
CPU, through the real command, report files included."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def test_bench_models_tiny(tmp_path):
    """Two pieces at a time (`--gpus 2`: on a GPU machine, one per GPU), as on the
    4-GPU machine the benchmark of record ran on; one at a time on a one-GPU machine
    (the command refuses more pieces than GPUs)."""
    gpus = min(2, torch.cuda.device_count()) if torch.cuda.is_available() else 2
    cmd = [sys.executable, "-m", "bench", "models", "--tiny", "--steps", "2", "--no-warm"]
    cmd += ["--workloads", "gpt2_train,llama_decode", "--sides", "privateuseone,cpu"]
    cmd += ["--out", str(tmp_path), "--timeout", "240", "--gpus", str(gpus)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = json.loads((tmp_path / "models.json").read_text())
    by = {(r["workload"], r["side"]): r for r in recs}
    assert set(by) == {
        (w, s) for w in ("gpt2_train", "llama_decode") for s in ("privateuseone", "cpu")
    }
    for r in recs:
        assert "error" not in r, r
        assert r["ms"] > 0 and r["per_s"] > 0 and r["first_step_s"] > 0
    ours = by[("gpt2_train", "privateuseone")]
    assert ours["cpu_fallbacks"] == 0, ours["fallback_ops"]
    assert ours["kernels_per_step"] > 10
    assert 0.0 <= ours["fast_path_share"] <= 1.0
    # Same seed and data: the loss after 2 steps matches the CPU's.
    assert abs(ours["loss"] - ours["reference_loss"]) < 0.05
    assert ours["speedup_vs_torch"] > 0
    md = (tmp_path / "models.md").read_text()
    assert "| gpt2_train |" in md and "torch_ext (privateuseone)" in md
    assert sorted(r["side_by_side_gpus"] for r in recs) == [gpus] * 4
    if gpus == 2:  # each piece pinned to half of this machine's CPUs
        share = len(os.sched_getaffinity(0)) // 2
        assert f"2 at a time, each on a GPU and {share} CPUs of its own" in md
        assert all(r["cpus"] == share and r["cpus_allowed"] == share for r in recs), recs
    # Each piece's caches were its own: ours (TORCH_EXT_CACHE_DIR) beside Triton's.
    assert len({r["triton_cache_dir"] for r in recs}) == 4


def test_hung_side_is_reported(tmp_path):
    """A side that dies or hangs keeps its row, with the error (here: a process
    timeout shorter than torch's import)."""
    cmd = [sys.executable, "-m", "bench", "models", "--tiny", "--steps", "2", "--no-warm"]
    cmd += ["--workloads", "gpt2_train", "--sides", "cpu", "--out", str(tmp_path)]
    cmd += ["--timeout", "240", "--side-timeout", "cpu=0.5"]  # this side's own limit
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (rec,) = json.loads((tmp_path / "models.json").read_text())
    assert rec["side"] == "cpu" and "timed out after 0.5 s" in rec["error"], rec["error"]
    assert "fails: process timed out" in (tmp_path / "models.md").read_text()


def test_warm_cache_run_is_ours_not_eagers(tmp_path):
    """The warm-cache first step runs again in a fresh process on the caches the cold
    run filled (ours: Triton's and TORCH_EXT_CACHE_DIR); torch eager keeps nothing on
    disk, so it gets no warm run."""
    cmd = [sys.executable, "-m", "bench", "models", "--tiny", "--steps", "2"]
    cmd += ["--workloads", "llama_decode", "--sides", "privateuseone,cpu"]
    cmd += ["--out", str(tmp_path), "--timeout", "240"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by = {r["side"]: r for r in json.loads((tmp_path / "models.json").read_text())}
    assert by["privateuseone"]["first_step_warm_s"] > 0, by["privateuseone"]
    assert "warm_error" not in by["privateuseone"]
    assert by["cpu"].get("first_step_warm_s") is None
    assert not list((tmp_path / "models_pieces").glob("*.tmp"))


def test_bad_side_timeout_is_named(tmp_path):
    cmd = [sys.executable, "-m", "bench", "models", "--tiny", "--side-timeout", "flaggems"]
    cmd += ["--out", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (
        proc.returncode == 2 and "--side-timeout 'flaggems': expected SIDE=SECONDS" in proc.stderr
    )
