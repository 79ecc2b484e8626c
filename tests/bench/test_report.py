"""bench/report.py: the kernel benchmark's tables from the workers' JSON lines, with
torch.compile as a peer and the targets of issues 15 and 16 per suite."""

import json
import subprocess
import sys
from pathlib import Path

from bench import report

ROOT = Path(__file__).resolve().parents[2]


def _write(out, impl, rows):
    lines = [{"meta": True, "impl": impl, "device": "cuda:0", "copy_gbps": 1000.0}]
    lines += [{**r, "impl": impl} for r in rows]
    (out / f"{impl}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))


def _row(op, shape, ms, **extra):
    return {"op": op, "shape": shape, "dtype": "bfloat16", "kernel_ms": ms, "bytes": 1e9,
            "host_us": 5.0, **extra}  # fmt: skip


def test_suite_targets_and_the_compile_column(tmp_path):
    cases = [  # (op, shape, ms ours, torch, compile, flops)
        ("conv_fwd", "resnet50 64->64 k3 s1 @56 nchw", 1.0, 1.0, 0.9, None),
        ("conv_fwd", "resnet50 64->256 k1 s1 @56 nchw", 2.0, 1.0, 1.0, None),  # 0.5x: lowest
        ("conv_wgrad", "resnet50 64->64 k3 s1 @56 nchw", 1.0, 1.0, 1.0, None),
        ("conv_dgrad", "mbv3_dw 16->16 k3 s1 @112 nhwc", 2.0, 1.0, 1.0, None),
        ("batch_norm_fwd", "64x112", 1.6, 1.0, 1.0, None),  # 1 GB in 1.6 ms: 62% of copy
        ("softmax", "8192x8192", 1.25, 1.1, 1.2, None),  # 1 GB in 1.25 ms: 80% of copy
        ("mm", "4096x4096x4096", 1.0, 0.95, 0.95, 1e12),  # 95% of cuBLAS
        ("linear_fwd", "gpt2 768->2304 x4096 fwd", 1.0, 0.8, 0.8, 1e12),
        ("sdpa_fwd_bwd", "H12 D64 L512", 1.0, 0.95, 0.95, 1e12),
    ]
    impls = {"ours": 2, "torch": 3, "compile": 4}
    for impl, col in impls.items():
        rows = []
        for case in cases:
            extra = {"flops": case[5], "matrix": True} if case[5] else {}
            if case[0].startswith("batch_norm"):
                extra["copy_same_ms"] = 1.2  # a copy of the same bytes: 1.2 / 1.6 = 75%
            rows.append(_row(case[0], case[1], case[col], **extra))
        _write(tmp_path, impl, rows)
    summary, _ = report.render(tmp_path)
    t = summary["suite_targets"]
    goal = ": geomean >= 0.9x cuDNN, none below 0.6x"
    fwd = t["conv fwd ResNet-50 nchw" + goal]
    assert fwd[1] == "missed" and "lowest 0.50x (conv_fwd resnet50 64->256" in fwd[0], fwd
    assert t["conv wgrad ResNet-50 nchw" + goal][1] == "met"
    assert "conv fwd ResNet-50 nhwc" + goal not in t  # no case
    assert t["conv dgrad MobileNetV3 depthwise nhwc (no target)"] == [
        "geomean 0.50x over 1, lowest 0.50x (conv_dgrad mbv3_dw 16->16 k3 s1 @112 nhwc)",
        "-",
    ]
    bn = t["batch norm fwd/bwd >= 80% of copy bandwidth"]
    assert bn[1] == "missed" and "62%" in bn[0], bn
    same = t["batch norm fwd/bwd >= 80% of a same-size copy's bandwidth"]
    assert same == ["geomean 75% over 1, lowest 75% (batch_norm_fwd 64x112)", "missed"], same
    soft = t["memory-bound ops >= 85% of copy bandwidth"]
    assert soft == ["lowest 80% (softmax 8192x8192 bfloat16), geomean 80% over 1", "missed"]
    assert t["mm/bmm/addmm bf16, fp16 at 4096^3 >= 90% of cuBLAS"][1] == "met"
    gemm = t["transformer GEMMs: geomean >= 85% of cuBLAS, none below 70%"]
    assert gemm[1] == "missed" and "80%" in gemm[0], gemm
    assert t["SDPA fwd+bwd >= 0.9x torch's choice, per configuration"][1] == "met"
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    first = rows[0]
    assert first["compile_ms"] == 0.9 and abs(first["speedup_vs_compile"] - 0.9) < 1e-12
    md = (tmp_path / "results.md").read_text()
    assert (
        "| conv_fwd | resnet50 64->64 k3 s1 @56 nchw | bfloat16 | 1.0000 | 1.0000 | 0.9000 |" in md
    )
    assert "## Targets of the suite (issues 15, 16)" in md


def test_compile_worker_on_the_cpu(tmp_path):
    """The compile side is a real torch.compile of each case (Inductor on the CPU here)."""
    cmd = [sys.executable, "-m", "bench", "--impls", "compile", "--torch-device", "cpu",
           "--scale", "0.0005", "--small-calls", "2", "--ops", "add", "--out", str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recs = [json.loads(x) for x in (tmp_path / "compile.jsonl").read_text().splitlines()]
    assert recs[0]["meta"] and recs[0]["impl"] == "compile"
    assert [r["op"] for r in recs[1:]] == ["add", "add"]
    assert all("error" not in r and r["kernel_ms"] > 0 for r in recs[1:]), recs


def test_runs_merge_into_one_report_with_the_whole_suite_target(tmp_path):
    """`python -m bench merge`: the pieces of a suite (here a default-suite run and a
    transformer run) in one report; issue 15's whole-suite target appears once all four
    of its categories are present (a piece alone gets no verdict on it)."""
    pieces = {
        "ops": [("add", "64M", 1.0, 1.5, None), ("softmax", "8192x8192", 1.0, 2.0, None),
                ("batch_norm_fwd", "32x64x56x56 nchw", 1.0, 9.0, None)],
        "tr": [("linear_fwd", "gpt2 768->768 x4096 fwd", 1.0, 0.9, 1e12),
               ("sdpa_fwd_bwd", "b8 h12 L512 d64", 1.0, 0.8, 1e12)],
    }  # fmt: skip
    for name, cases in pieces.items():
        d = tmp_path / name
        d.mkdir()
        for impl, col in (("ours", 2), ("torch", 3)):
            rows = []
            for case in cases:
                extra = {"flops": case[4], "matrix": True} if case[4] else {}
                rows.append(_row(case[0], case[1], case[col], **extra))
            _write(d, impl, rows)
    name = report.WHOLE_SUITE
    alone, _ = report.render(tmp_path / "ops")
    assert name not in alone["suite_targets"]
    out = tmp_path / "all"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "merge", "--out", str(out), str(tmp_path / "ops"),
         str(tmp_path / "tr")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    merged = json.loads((out / "results.json").read_text())
    assert len(merged["rows"]) == 5
    value, verdict = merged["summary"]["suite_targets"][name]
    # speed-ups 1.5, 2.0, 0.9, 0.8 (the batch norm's 9.0: issue 16's category): geomean 2.16 ** 0.25 = 1.21
    assert verdict == "met" and value.startswith("geomean 1.21x over 4, lowest 0.80x"), value
    assert name in (out / "results.md").read_text()


def test_a_conv_group_our_worker_did_not_finish_decides_nothing(tmp_path):
    """A worker cut short (its timeout) measures some of a direction's cases: the
    target's line counts the measured ones and says "partial", not met or missed."""
    shapes = ["resnet50 64->64 k1 s1 @56 nhwc", "resnet50 64->256 k1 s1 @56 nhwc"]
    _write(tmp_path, "torch", [_row("conv_wgrad", s, 1.0) for s in shapes])
    _write(tmp_path, "ours", [_row("conv_wgrad", shapes[0], 0.5)])
    summary, _ = report.render(tmp_path)
    value, verdict = summary["suite_targets"][
        "conv wgrad ResNet-50 nhwc: geomean >= 0.9x cuDNN, none below 0.6x"
    ]
    assert value.startswith("geomean 2.00x over 1,") and verdict == "partial: 1 of 2", value


def test_memory_bound_lowest_names_its_dtype():
    """Two dtypes of one op and shape: the lowest case is named with its own dtype (the
    report once named the first row's)."""
    rows = [
        {"op": "cross_entropy", "shape": "4096x32768", "dtype": d, "ours_bw_frac": bw,
         "speedup_vs_flaggems": fg}
        for d, bw, fg in (("float32", 0.96, 3.5), ("bfloat16", 0.83, 0.9))
    ]  # fmt: skip
    t = report.suite_targets(rows)
    assert t["memory-bound ops >= 85% of copy bandwidth"][0].startswith(
        "lowest 83% (cross_entropy 4096x32768 bfloat16)"
    )
    assert "(cross_entropy 4096x32768 bfloat16)" in t["memory-bound ops >= 1.0x FlagGems, each"][0]
