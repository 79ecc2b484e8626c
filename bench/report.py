"""Turns the workers' JSON lines into results.json, results.md and results.png.

python -m bench.report bench_out      # re-render from saved worker output
"""

import json
import math
import sys
from pathlib import Path

IMPLS = ("ours", "torch", "compile", "flaggems")
PEERS = ("torch", "compile", "flaggems")
ELEMENTWISE_BW_OPS = ("add", "mul", "exp")


def load(*dirs):
    """(meta, rows) of the workers' JSON lines in `dirs` (several: the pieces of one suite
    run as shards or separate commands, merged; a case measured twice keeps the last)."""
    meta, rows = {}, {}
    for impl, out_dir in ((i, d) for d in dirs for i in IMPLS):
        path = Path(out_dir) / f"{impl}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("meta"):
                meta[impl] = rec
                continue
            key = (rec["op"], rec["shape"], rec["dtype"])
            rows.setdefault(key, {})[impl] = rec
    return meta, rows


def _ok(rec):
    return rec is not None and "error" not in rec


def _geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summarize(meta, rows):
    copy = (meta.get("torch") or {}).get("copy_gbps") or (meta.get("ours") or {}).get("copy_gbps")
    table = []
    for (op, shape, dtype), by_impl in rows.items():
        row = {"op": op, "shape": shape, "dtype": dtype}
        note = (by_impl.get("torch") or {}).get("note")
        if note:
            row["torch_note"] = note
        for impl in IMPLS:
            rec = by_impl.get(impl)
            if rec is None:
                continue
            if not _ok(rec):
                row[f"{impl}_error"] = rec["error"]
                continue
            ms = rec["kernel_ms"]
            row[f"{impl}_ms"] = ms
            row[f"{impl}_host_us"] = rec.get("host_us")
            gbps = rec["bytes"] / (ms * 1e-3) / 1e9
            row[f"{impl}_gbps"] = gbps
            if copy:
                row[f"{impl}_bw_frac"] = gbps / copy
            if rec.get("copy_same_ms"):  # a copy of the same bytes on the same device
                row[f"{impl}_same_copy_frac"] = rec["copy_same_ms"] / ms
            if rec.get("flops"):
                row[f"{impl}_tflops"] = rec["flops"] / (ms * 1e-3) / 1e12
            row["matrix"] = rec.get("matrix", False)
        if row.get("ours_tflops") and row.get("torch_tflops"):
            row["of_torch_tflops"] = row["ours_tflops"] / row["torch_tflops"]
        for peer in PEERS:
            if row.get("ours_ms") and row.get(f"{peer}_ms"):
                row[f"speedup_vs_{peer}"] = row[f"{peer}_ms"] / row["ours_ms"]
        ref, mine = by_impl.get("torch"), by_impl.get("ours")
        if _ok(ref) and _ok(mine) and "check" in ref and "check" in mine:
            a, b = mine["check"]["sum"], ref["check"]["sum"]
            scale = max(ref["check"]["abs_sum"], 1e-30)
            row["check_rel_diff"] = abs(a - b) / scale
            row["check_shape_ok"] = mine["check"]["shape"] == ref["check"]["shape"]
        table.append(row)

    def pick(op, dtype=None):
        return [r for r in table if r["op"] == op and (dtype is None or r["dtype"] == dtype)]

    summary = {"copy_gbps": copy}
    speedups = [r.get("speedup_vs_torch") for r in table]
    summary["geomean_speedup_vs_torch"] = _geomean(speedups)
    summary["ops_measured"] = sum(1 for r in table if r.get("ours_ms"))
    summary["ops_total"] = len(table)
    non_matrix = [r for r in table if not r.get("matrix") and r.get("speedup_vs_torch")]
    if non_matrix:
        worst = min(non_matrix, key=lambda r: r["speedup_vs_torch"])
        summary["worst_non_matrix"] = {
            "op": worst["op"],
            "dtype": worst["dtype"],
            "speedup": worst["speedup_vs_torch"],
        }
    add = (pick("add", "float32") or [{}])[0]
    for impl in IMPLS:
        if add.get(f"{impl}_host_us"):
            summary[f"add_host_us_{impl}"] = add[f"{impl}_host_us"]
    if add.get("ours_host_us") and add.get("torch_host_us"):
        summary["add_host_ratio_vs_torch"] = add["ours_host_us"] / add["torch_host_us"]
    if add.get("ours_host_us") and add.get("flaggems_host_us"):
        summary["add_host_ratio_vs_flaggems"] = add["ours_host_us"] / add["flaggems_host_us"]
    summary["bw_frac"] = {
        f"{r['op']}/{r['dtype']}": r.get("ours_bw_frac")
        for op in ELEMENTWISE_BW_OPS
        for r in pick(op)
    }
    summary["mm_tflops_ratio"] = {
        r["dtype"]: (
            r["ours_tflops"] / r["torch_tflops"]
            if r.get("ours_tflops") and r.get("torch_tflops")
            else None
        )
        for r in pick("mm")
    }
    by_category = {}
    for r in table:
        by_category.setdefault(category(r), []).append(r)
    summary["geomean_by_category"] = {
        cat: {peer: _geomean([r.get(f"speedup_vs_{peer}") for r in rows]) for peer in PEERS}
        for cat, rows in sorted(by_category.items())
    }
    summary["targets"] = targets(summary)
    summary["suite_targets"] = suite_targets(table)
    return table, summary


def _pass_of(row):
    """fwd, dgrad or wgrad for the conv and transformer suites' cases (None: other)."""
    for p in ("fwd", "dgrad", "wgrad"):
        if row["op"].endswith("_" + p) or row["shape"].endswith(" " + p):
            return p
    return None


MEMORY_BOUND = (
    *("softmax", "log_softmax", "layer_norm", "rms_norm", "amax", "amin", "argmax"),
    *("cross_entropy", "gelu", "gelu_tanh"),
)


def suite_targets(table):
    """Issue 15's and 16's targets over the cases present: {target: [value text, verdict]}."""
    out = {}

    def verdict(ok):
        return "met" if ok else "missed"

    def geo_min(rows, key):
        """(geomean, lowest, its case, how many cases have the value): a case our side
        did not measure (a worker cut short) is not counted."""
        vals = [r[key] for r in rows if r.get(key)]
        if not vals:
            return None
        worst = min(rows, key=lambda r: r.get(key) or math.inf)
        return _geomean(vals), worst[key], f"{worst['op']} {worst['shape']}", len(vals), worst

    convs = [r for r in table if r["op"].startswith("conv") and r["dtype"] == "bfloat16"]
    for p in ("fwd", "dgrad", "wgrad"):
        for layout in ("nchw", "nhwc"):
            for net, goal in (("resnet50", True), ("mbv3_dw", False)):
                rows = [
                    r
                    for r in convs
                    if _pass_of(r) == p
                    and r["shape"].startswith(net)
                    and r["shape"].endswith(layout)
                ]
                g = geo_min(rows, "speedup_vs_torch")
                if not g:
                    continue
                value = f"geomean {g[0]:.2f}x over {g[3]}, lowest {g[1]:.2f}x ({g[2]})"
                if goal:
                    name = f"conv {p} ResNet-50 {layout}: geomean >= 0.9x cuDNN, none below 0.6x"
                    ok = verdict(g[0] >= 0.9 and g[1] >= 0.6)
                    # cases our side did not reach (a worker cut short) decide nothing
                    out[name] = [
                        value,
                        ok if g[3] == len(rows) else f"partial: {g[3]} of {len(rows)}",
                    ]
                else:
                    out[f"conv {p} MobileNetV3 depthwise {layout} (no target)"] = [value, "-"]
    bn = [r for r in table if r["op"].startswith("batch_norm_")]
    g = geo_min(bn, "ours_bw_frac")
    if g:
        out["batch norm fwd/bwd >= 80% of copy bandwidth"] = [
            f"geomean {g[0]:.0%} over {g[3]}, lowest {g[1]:.0%} ({g[2]})",
            verdict(g[1] >= 0.8),
        ]
    # The same floor of bytes against a copy of as many bytes on the same device: the
    # bandwidth a kernel of that size can reach (a 1.6 MB map is launch bound).
    g = geo_min(bn, "ours_same_copy_frac")
    if g:
        out["batch norm fwd/bwd >= 80% of a same-size copy's bandwidth"] = [
            f"geomean {g[0]:.0%} over {g[3]}, lowest {g[1]:.0%} ({g[2]})",
            verdict(g[1] >= 0.8),
        ]
    square = [r for r in table if r["op"] in ("mm", "bmm", "addmm")]
    g = geo_min(square, "of_torch_tflops")
    if g:
        out["mm/bmm/addmm bf16, fp16 at 4096^3 >= 90% of cuBLAS"] = [
            f"lowest {g[1]:.0%} ({g[2]}), geomean {g[0]:.0%} over {g[3]}",
            verdict(g[1] >= 0.9),
        ]
    memory = [r for r in table if r["op"] in MEMORY_BOUND]
    g = geo_min(memory, "ours_bw_frac")
    if g:
        out["memory-bound ops >= 85% of copy bandwidth"] = [
            f"lowest {g[1]:.0%} ({g[2]} {g[4]['dtype']}), geomean {g[0]:.0%} over {g[3]}",
            verdict(g[1] >= 0.85),
        ]
    g = geo_min(memory, "speedup_vs_flaggems")
    if g:
        out["memory-bound ops >= 1.0x FlagGems, each"] = [
            f"lowest {g[1]:.2f}x ({g[2]} {g[4]['dtype']}), geomean {g[0]:.2f}x",
            verdict(g[1] >= 1.0),
        ]
    gemms = [r for r in table if r["op"].startswith("linear_")]
    g = geo_min(gemms, "of_torch_tflops")
    if g:
        out["transformer GEMMs: geomean >= 85% of cuBLAS, none below 70%"] = [
            f"geomean {g[0]:.0%} over {g[3]}, lowest {g[1]:.0%} ({g[2]})",
            verdict(g[0] >= 0.85 and g[1] >= 0.70),
        ]
    # Issue 15's suite: its four categories (the batch-norm cases issue 16 added to the
    # default suite are a category of their own)
    whole = [r for r in table if category(r) in ISSUE15_CATEGORIES]
    g = geo_min(whole, "speedup_vs_torch")
    if g and {category(r) for r in whole} == set(ISSUE15_CATEGORIES):  # all four: the suite
        out[WHOLE_SUITE] = [
            f"geomean {g[0]:.2f}x over {g[3]}, lowest {g[1]:.2f}x ({g[2]})",
            verdict(g[0] >= 1.2),
        ]
    sdpa = [r for r in table if r["op"].startswith("sdpa")]
    g = geo_min(sdpa, "speedup_vs_torch")
    if g:
        out["SDPA fwd+bwd >= 0.9x torch's choice, per configuration"] = [
            f"geomean {g[0]:.2f}x over {g[3]}, lowest {g[1]:.2f}x ({g[2]})",
            verdict(g[1] >= 0.9),
        ]
    return out


REDUCTION_OPS = (
    *("softmax", "log_softmax", "layer_norm", "rms_norm", "cross_entropy", "group_norm"),
    *("sum", "mean", "amax", "amin", "argmax", "cumsum", "prod"),
)


ISSUE15_CATEGORIES = ("pointwise", "reduction/norm", "matmul", "attention")
WHOLE_SUITE = "whole suite (pointwise, reduction/norm, matmul, attention) >= 1.2x torch eager"


def category(row):
    """pointwise, reduction/norm, matmul, attention (issue 15's categories), or conv and
    batch norm (issue 16's)."""
    op = row["op"]
    if op.startswith("sdpa") or "attention" in op:
        return "attention"
    if op.startswith("conv"):
        return "conv"
    if op.startswith("batch_norm"):
        return "batch norm"
    if row.get("matrix"):
        return "matmul"
    if op in REDUCTION_OPS:
        return "reduction/norm"
    return "pointwise"


def targets(s):
    def verdict(value, ok):
        return "n/a" if value is None else ("met" if ok(value) else "missed")

    worst = (s.get("worst_non_matrix") or {}).get("speedup")
    bw = [v for v in s["bw_frac"].values()]
    bw_min = None if not bw or any(v is None for v in bw) else min(bw)
    mm = list(s["mm_tflops_ratio"].values())
    mm_min = None if not mm or any(v is None for v in mm) else min(mm)
    host = s.get("add_host_ratio_vs_torch")
    vs_fg = s.get("add_host_ratio_vs_flaggems")
    return {
        "geomean kernel speed-up vs torch >= 1.0": verdict(
            s["geomean_speedup_vs_torch"], lambda v: v >= 1.0
        ),
        "no non-matrix op below 0.8x": verdict(worst, lambda v: v >= 0.8),
        "add 1-element host cost <= 1.5x torch": verdict(host, lambda v: v <= 1.5),
        "add 1-element host cost < FlagGems": verdict(vs_fg, lambda v: v < 1.0),
        "add/mul/exp >= 85% of D2D copy": verdict(bw_min, lambda v: v >= 0.85),
        "bf16/fp16 mm 4096^3 >= 70% of torch TFLOP/s": verdict(mm_min, lambda v: v >= 0.70),
    }


def _fmt(v, spec=".3f", none="n/a"):
    return none if v is None else format(v, spec)


def markdown(meta, table, summary):
    gpu = next(
        (m.get("device_name") for m in meta.values() if m.get("device_name")), "unknown device"
    )
    lines = [f"# torch_ext benchmark on {gpu}", ""]
    for impl, m in meta.items():
        extra = ", ".join(
            f"{k} {m[k]}" for k in ("torch", "triton", "flaggems", "python") if k in m
        )
        lines.append(
            f"- **{impl}**: `{m.get('device')}`; {extra}; D2D copy "
            f"{_fmt(m.get('copy_gbps'), '.0f')} GB/s"
            + (f" ({m['copy_error']})" if "copy_error" in m else "")
        )
    lines += [
        "",
        "Kernel time is the median of event-timed calls on each side's own current stream, "
        "each call queued behind a short GPU spin so that the device runs its kernels back to "
        "back instead of waiting for the host (the host's cost is the host µs column); "
        "speed-up = peer time / ours. Bandwidth counts each input read once and each output "
        "written once, as a fraction of torch's device-to-device copy in the same run. "
        "Host µs = wall time per call on (about) 1-element inputs, many calls back to back. "
        "`n/a` = the op does not run natively in our build (fallback set to error) or the peer failed.",
        "",
    ]
    lines.append("## Targets (issue 5)")
    lines.append("")
    lines.append("| target | value | verdict |")
    lines.append("|---|---|---|")
    vals = {
        "geomean kernel speed-up vs torch >= 1.0": _fmt(summary["geomean_speedup_vs_torch"], ".2f"),
        "no non-matrix op below 0.8x": (
            f"{summary['worst_non_matrix']['op']} {summary['worst_non_matrix']['dtype']} "
            f"{summary['worst_non_matrix']['speedup']:.2f}x"
        )
        if summary.get("worst_non_matrix")
        else "n/a",
        "add 1-element host cost <= 1.5x torch": (
            f"{_fmt(summary.get('add_host_us_ours'), '.1f')} µs vs "
            f"{_fmt(summary.get('add_host_us_torch'), '.1f')} µs "
            f"({_fmt(summary.get('add_host_ratio_vs_torch'), '.2f')}x)"
        ),
        "add 1-element host cost < FlagGems": f"FlagGems {_fmt(summary.get('add_host_us_flaggems'), '.1f')} µs",
        "add/mul/exp >= 85% of D2D copy": ", ".join(
            f"{k} {_fmt(v, '.0%')}" for k, v in summary["bw_frac"].items()
        )
        or "n/a",
        "bf16/fp16 mm 4096^3 >= 70% of torch TFLOP/s": ", ".join(
            f"{k} {_fmt(v, '.0%')}" for k, v in summary["mm_tflops_ratio"].items()
        )
        or "n/a",
    }
    for name, verdict in summary["targets"].items():
        lines.append(f"| {name} | {vals[name]} | {verdict} |")
    if summary.get("suite_targets"):
        lines += ["", "## Targets of the suite (issues 15, 16)", ""]
        lines += ["| target | value | verdict |", "|---|---|---|"]
        for name, (value, verdict) in summary["suite_targets"].items():
            lines.append(f"| {name} | {value} | {verdict} |")
    lines += [
        "",
        "| category | geomean vs torch | vs torch.compile | vs FlagGems |",
        "|---|---|---|---|",
    ]
    for cat, g in summary["geomean_by_category"].items():
        lines.append(
            f"| {cat} | {_fmt(g['torch'], '.2f')} | {_fmt(g.get('compile'), '.2f')} | "
            f"{_fmt(g['flaggems'], '.2f')} |"
        )
    lines += [
        "",
        f"Ops measured natively: {summary['ops_measured']} of {summary['ops_total']} cases.",
        "",
    ]
    lines.append("## Per op")
    lines.append("")
    lines.append(
        "| op | shape | dtype | ours ms | torch ms | compile ms | FlagGems ms | vs torch | "
        "vs compile | vs FlagGems | ours BW (of copy) | TFLOP/s ours / torch / compile / FG | "
        "host µs ours / torch / compile / FG | check |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def note(r):
        return f" (torch: {r['torch_note']})" if r.get("torch_note") else ""

    for r in table:

        def ms(impl):
            return _fmt(r.get(f"{impl}_ms"), ".4f")

        tfl = (
            " / ".join(_fmt(r.get(f"{i}_tflops"), ".0f") for i in IMPLS) if r.get("matrix") else ""
        )
        host = " / ".join(_fmt(r.get(f"{i}_host_us"), ".1f") for i in IMPLS)
        bw = (
            ""
            if r.get("matrix") or r.get("ours_bw_frac") is None
            else f"{r['ours_gbps']:.0f} GB/s ({r['ours_bw_frac']:.0%})"
        )
        if bw and r.get("ours_same_copy_frac"):
            bw += f"; {r['ours_same_copy_frac']:.0%} of a same-size copy"
        check = ""
        if "check_rel_diff" in r:
            check = f"{r['check_rel_diff']:.1e}" + ("" if r.get("check_shape_ok") else " SHAPE")
        lines.append(
            f"| {r['op']} | {r['shape']}{note(r)} | {r['dtype']} | {ms('ours')} | {ms('torch')} | "
            f"{ms('compile')} | {ms('flaggems')} | {_fmt(r.get('speedup_vs_torch'), '.2f')} | "
            f"{_fmt(r.get('speedup_vs_compile'), '.2f')} | {_fmt(r.get('speedup_vs_flaggems'), '.2f')} | "
            f"{bw} | {tfl} | {host} | {check} |"
        )
    errors = [
        (r["op"], r["dtype"], i, r[f"{i}_error"]) for r in table for i in IMPLS if f"{i}_error" in r
    ]
    if errors:
        lines += ["", "## Not measured", "", "| op | dtype | impl | reason |", "|---|---|---|---|"]
        for op, dt, impl, err in errors:
            lines.append(f"| {op} | {dt} | {impl} | {err.replace('|', '/')[:200]} |")
    return "\n".join(lines) + "\n"


def plot(table, path, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = [f"{r['op']}\n{r['dtype']}" for r in table]
    x = range(len(table))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(10, 0.6 * len(table)), 9))
    width = 0.27
    for off, key, name in (
        (-width, "ours_ms", "torch_ext (privateuseone)"),
        (0, "compile_ms", "torch.compile"),
        (width, "flaggems_ms", "FlagGems"),
    ):
        vals = [(r["torch_ms"] / r[key]) if r.get(key) and r.get("torch_ms") else 0 for r in table]
        ax1.bar([i + off for i in x], vals, width, label=name)
    ax1.axhline(1.0, color="k", lw=0.8)
    ax1.set_yscale("log")
    ax1.set_ylabel("kernel speed-up vs PyTorch eager (x)")
    ax1.set_xticks(list(x), labels, fontsize=7, rotation=60)
    ax1.legend()
    ax1.set_title(title)
    width = 0.2
    for off, impl in (
        (-1.5 * width, "ours"),
        (-0.5 * width, "torch"),
        (0.5 * width, "compile"),
        (1.5 * width, "flaggems"),
    ):
        vals = [r.get(f"{impl}_host_us") or 0 for r in table]
        ax2.bar([i + off for i in x], vals, width, label=impl)
    ax2.set_yscale("log")
    ax2.set_ylabel("host µs per call, ~1-element inputs")
    ax2.set_xticks(list(x), labels, fontsize=7, rotation=60)
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def render(out_dir, sources=()):
    """Writes results.{json,md,png} into out_dir from its workers' lines, or from those of
    `sources` (result directories) merged (`python -m bench merge`)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta, rows = load(*(sources or [out_dir]))
    table, summary = summarize(meta, rows)
    gpu = next(
        (m.get("device_name") for m in meta.values() if m.get("device_name")), "unknown device"
    )
    (out_dir / "results.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "rows": table}, indent=1)
    )
    (out_dir / "results.md").write_text(markdown(meta, table, summary))
    plotted = plot(
        table,
        out_dir / "results.png",
        f"torch_ext vs PyTorch eager, torch.compile, FlagGems on {gpu}",
    )
    return summary, plotted


if __name__ == "__main__":
    summary, plotted = render(sys.argv[1] if len(sys.argv) > 1 else "bench_out")
    print(json.dumps(summary, indent=1))
    if not plotted:
        print("matplotlib not importable: no PNG written")
