"""CI smoke of the kernel benchmark's batch-norm cases (bench/cases_norm.py) at a
tiny scale: ours (the host driver) and torch on the CPU, one run, same values."""

import json
import subprocess
import sys
from pathlib import Path

from bench import cases
from bench.cases_norm import RESNET50_BN

ROOT = Path(__file__).resolve().parents[2]


def test_norm_case_list():
    names = {}
    for c in cases.norm_cases():
        names.setdefault(c.op, []).append(c.shape)
    assert set(names) == {"batch_norm_fwd", "batch_norm_fwd_cl", "batch_norm_bwd",
                          "batch_norm_bwd_cl"}  # fmt: skip
    assert all(len(v) == len(RESNET50_BN) == len(set(v)) for v in names.values())


# Four of the twelve maps, up to 256 channels: the interpreter's batch norm costs about
# a second a call at 2048 channels (the twelve took two minutes of CI; the case list is
# test_norm_case_list's).
SMOKE_SHAPES = ["32x64x112x112", "32x256x56x56", "32x128x28x28", "32x256x14x14"]


def _records(path):
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    return recs[0], {(r["op"], r["shape"]): r for r in recs[1:]}


def test_norm_bench_tiny(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "--impls",
        "ours,torch",
        "--torch-device",
        "cpu",
        "--scale",
        "0.0005",
        "--small-calls",
        "2",
        "--out",
        str(tmp_path),
        "--ops",
        ",".join(f"batch_norm_bwd_cl {s} " for s in SMOKE_SHAPES),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta, ours = _records(tmp_path / "ours.jsonl")
    _, torch_ = _records(tmp_path / "torch.jsonl")
    assert meta["copy_gbps"] > 0
    assert len(ours) == len(torch_) == len(SMOKE_SHAPES)
    for key, r in ours.items():
        assert "error" not in r, (key, r.get("traceback"))
        assert r["bytes"] > 0 and r["kernel_ms"] > 0 and r["copy_same_ms"] > 0
        a, b = r["check"], torch_[key]["check"]
        assert a["shape"] == b["shape"]
        assert abs(a["abs_sum"] - b["abs_sum"]) <= 2e-2 * max(1.0, b["abs_sum"]), key
