"""CI smoke of `python -m bench host`: every op, a few calls, ours (the host
driver here) and torch on the CPU in one run."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPS = {
    "add", "mul", "gelu", "softmax", "layer_norm", "rms_norm", "sum(dim)", "mean", "amax",
    "argmax", "mm", "linear", "bmm", "index_select", "embedding", "cat", "where",
    "cross_entropy", "sdpa", "adamw_step",
}  # fmt: skip


def test_bench_host_few_calls(tmp_path):
    cmd = [sys.executable, "-m", "bench", "host", "--calls", "6", "--impls", "ours,torch"]
    cmd += ["--torch-device", "cpu", "--out", str(tmp_path), "--repeats", "3"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "host.json").read_text())
    assert data["calls"] == 6 and data["repeats"] == 3
    for impl in ("ours", "torch"):
        rows = data["results"][impl]["rows"]
        assert {r["op"] for r in rows} == OPS
        assert {r["shape"] for r in rows} == {"1x64", "64x64"}
        for r in rows:
            assert "error" not in r and r["us"] > 0, r
            # three batches of two calls; the row is their median
            assert len(r["us_batches"]) == 3 and r["us"] == sorted(r["us_batches"])[1], r
    md = (tmp_path / "host.md").read_text()
    assert "| softmax | 64x64 |" in md and "ours ÷ torch" in md
    # the title names the device (the rows' loop once overwrote its name with an op's)
    assert data["results"]["torch"]["device_name"] == "cpu"
    assert (
        md.splitlines()[0].startswith("# Host cost per op on ")
        and "adamw" not in md.splitlines()[0]
    )


def test_worker_cut_by_its_timeout_keeps_its_rows(tmp_path):
    """A worker past --timeout: the rows it measured stay, every other row says it timed
    out, and the files are written (the GPU run of session 13 lost a whole host run when
    FlagGems' worker outlived the outer limit)."""
    cmd = [sys.executable, "-m", "bench", "host", "--calls", "100000", "--impls", "torch"]
    cmd += ["--torch-device", "cpu", "--out", str(tmp_path), "--timeout", "12"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads((tmp_path / "host.json").read_text())["results"]["torch"]
    assert "timed out after 12 s" in res["error"]
    rows = res["rows"]
    assert {(r["op"], r["shape"]) for r in rows} == {(o, s) for o in OPS for s in ("1x64", "64x64")}
    assert all(("us" in r) != ("error" in r) for r in rows)
    assert any("error" in r for r in rows)  # 100000 AdamW steps alone outlast 12 s
    assert "timed out" in (tmp_path / "host.md").read_text()


def test_worker_killed_mid_write_leaves_a_whole_piece(tmp_path, monkeypatch):
    """The worker's piece is replaced whole, never rewritten in place: a worker killed while
    writing its third row leaves the two rows before it, readable (CI of stop 48 read an
    empty piece when the timeout's kill landed inside a write)."""
    import bench.host as host

    piece, writes = tmp_path / "host_torch.tmp.json", []
    real = Path.write_text

    def dying_write(self, text, *a, **k):
        writes.append(self)
        if len(writes) == 3:
            real(self, text[: len(text) // 2])
            raise KeyboardInterrupt("killed while writing")
        return real(self, text, *a, **k)

    monkeypatch.setattr(Path, "write_text", dying_write)
    try:
        host.worker("torch", "cpu", 3, str(piece))
    except KeyboardInterrupt:
        pass
    monkeypatch.undo()
    assert len(writes) == 3
    rows = json.loads(piece.read_text())["rows"]
    assert [r["op"] for r in rows] == ["add", "mul"] and all(r["us"] > 0 for r in rows)
