"""The zoo's table: rows recorded under ZOO_REPORT (by tests/models/test_zoo.py and by the
GPU command's tests_gpu/test_torchvision.py, whose recorder is run here too: that file
only runs on a GPU machine) and the Markdown zoo_table.py prints from them."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import zoo_table

ROOT = Path(__file__).resolve().parents[2]


def test_rows_and_table(tmp_path, monkeypatch):
    rows = tmp_path / "rows.jsonl"
    monkeypatch.setenv("ZOO_REPORT", str(rows))
    zoo_table.record(test="train", model="gpt2", steps=3, loss_diff=4.8e-7,
                     grad_diff_rel=2.8e-7, worst_grad="lm_head.weight")  # fmt: skip
    zoo_table.record(test="decode static", model="gpt2", steps=6, logit_diff=1.2e-7)
    # tests_gpu/test_torchvision.py's recorder, taken from its source and run here
    src = (ROOT / "tests_gpu" / "test_torchvision.py").read_text()
    fn = next(n for n in ast.parse(src).body if getattr(n, "name", "") == "_record")
    ns = {"__file__": str(ROOT / "tests_gpu" / "test_torchvision.py")}
    exec(compile(ast.Module([fn], []), "test_torchvision.py", "exec"), ns)
    ns["_record"](test="train (torchvision)", model="resnet50", steps=1, loss_diff=1e-9,
                  grad_diff_rel=3e-12, worst_grad="fc.weight")  # fmt: skip
    got = [json.loads(line) for line in rows.read_text().splitlines()]
    assert [r["model"] for r in got] == ["gpt2", "gpt2", "resnet50"]
    out = subprocess.run([sys.executable, str(ROOT / "tests/models/zoo_table.py"), str(rows)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "| gpt2 | train | 3 | 4.8e-07 | 2.8e-07 (lm_head.weight) |" in out
    assert "| gpt2 | decode static | 6 |  | 1.2e-07 |" in out
    assert "| resnet50 | train (torchvision) | 1 | 1.0e-09 | 3.0e-12 (fc.weight) |" in out


def test_no_report_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("ZOO_REPORT", raising=False)
    monkeypatch.chdir(tmp_path)
    zoo_table.record(test="train", model="gpt2", steps=3)
    assert list(tmp_path.iterdir()) == []
