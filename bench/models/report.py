"""Merges the pieces of `python -m bench models` into models.{json,md,png}."""

import json
from pathlib import Path

from bench.models.workloads import WORKLOADS

SIDE_NAMES = {
    "privateuseone": "torch_ext (privateuseone)",
    "privateuseone_compile": "torch.compile (privateuseone)",
    "cuda": "torch eager (cuda)",
    "compile": "torch.compile (cuda)",
    "flaggems": "FlagGems (cuda)",
    "cpu": "torch eager (cpu)",
}
SIDE_ORDER = list(SIDE_NAMES)


def load(out):
    recs = []
    for f in sorted((Path(out) / "models_pieces").glob("*__*.json")):
        try:
            recs.append(json.loads(f.read_text()))
        except ValueError:
            continue
    # speedup_vs_torch (torch eager ms / this side's ms) and the reference loss.
    ref = {r["workload"]: r for r in recs if r["side"] in ("cuda", "cpu") and "ms" in r}
    cuda = {r["workload"]: r for r in recs if r["side"] == "cuda" and "ms" in r}
    for r in recs:
        base = cuda.get(r["workload"]) or ref.get(r["workload"])
        if base and "ms" in r:
            r["speedup_vs_torch"] = base["ms"] / r["ms"]
            r["reference_side"] = base["side"]
            r["reference_loss"] = base.get("loss")
    order = {w: i for i, w in enumerate(WORKLOADS)}
    recs.sort(key=lambda r: (order.get(r["workload"], 99), SIDE_ORDER.index(r["side"])))
    return recs


def _f(v, fmt="{:.2f}"):
    return "—" if v is None else fmt.format(v)


def _cell(r, label):
    if r is None:
        return "—"
    if "error" in r:
        return "fails: " + r["error"].splitlines()[0][:80].replace("|", "\\|")
    return f"{r['ms']:.1f} {label}"


def markdown(recs):
    devices = sorted({r["device_name"] for r in recs if r.get("device_name", "cpu") != "cpu"})
    sides = [s for s in SIDE_ORDER if any(r["side"] == s for r in recs)]
    by = {(r["workload"], r["side"]): r for r in recs}
    workloads = [w for w in WORKLOADS if any(r["workload"] == w for r in recs)]
    tiny = any(r.get("tiny") for r in recs)
    lines = [f"# Model benchmark on {', '.join(devices) or 'the host'}", ""]
    if tiny:
        lines += ["Tiny configuration (2-layer models): a smoke run, not a measurement.", ""]
    torch_v = sorted({r.get("torch") for r in recs if r.get("torch")})
    side_by_side = max((r.get("side_by_side_gpus") or 1) for r in recs) if recs else 1
    together = ""
    if side_by_side > 1:
        cpus = sorted({r["cpus"] for r in recs if r.get("cpus")})
        share = f" and {'/'.join(map(str, cpus))} CPUs" if cpus else ""
        together = f", {side_by_side} at a time, each on a GPU{share} of its own"
    lines += [
        f"torch {', '.join(torch_v)}; median after warm-up; each piece in a fresh process"
        f"{together}.",
        "",
    ]
    lines.append("| workload | " + " | ".join(SIDE_NAMES[s] for s in sides) + " |")
    lines.append("|---" * (len(sides) + 1) + "|")
    for w in workloads:
        label = WORKLOADS[w].ms_label
        cells = [_cell(by.get((w, s)), label) for s in sides]
        lines.append(f"| {w} | " + " | ".join(cells) + " |")
    lines += ["", "## Details", ""]
    cols = (
        "workload | side | ms | per s | vs torch eager | first step cold s | first step warm s "
        "| peak GiB | loss (ref) | CPU fallbacks | kernels/step | fast-path share | GPU busy ms"
    )
    lines.append(f"| {cols} |")
    lines.append("|---" * (cols.count("|") + 1) + "|")
    for r in recs:
        if "error" in r:
            err = r["error"].splitlines()[0][:120].replace("|", "\\|")
            lines.append(f"| {r['workload']} | {r['side']} | fails: {err} |" + " |" * 10)
            continue
        loss = _f(r.get("loss"), "{:.4f}")
        if r.get("reference_loss") is not None and r["side"] not in ("cuda", "cpu"):
            loss += f" ({r['reference_loss']:.4f})"
        unit = r.get("unit", "")
        share = r.get("fast_path_share")
        cells = [
            r["workload"], r["side"], _f(r.get("ms")), f"{r['per_s']:.0f} {unit}",
            _f(r.get("speedup_vs_torch"), "{:.2f}×"), _f(r.get("first_step_s")),
            _f(r.get("first_step_warm_s")), _f(r.get("peak_mem_gib")), loss,
            _f(r.get("cpu_fallbacks"), "{}"), _f(r.get("kernels_per_step"), "{:.0f}"),
            "—" if share is None else f"{100 * share:.0f}%", _f(r.get("gpu_busy_ms"), "{:.1f}"),
        ]  # fmt: skip
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += [
        "",
        "First-step times: a fresh process with empty kernel caches (Triton's, Inductor's "
        "for torch.compile, and ours: TORCH_EXT_CACHE_DIR's warm-up records and "
        "convolution tuning) and again with those caches warm (not for torch eager, which "
        "keeps no compiled kernels on disk). Our fast-path "
        "launch cache lives in memory, so it is empty in both. GPU busy ms: the time the "
        "GPU spent in one step's kernels (the union of their intervals, through the "
        "profiler's CUDA activity, one extra step); well under the step's ms means the "
        "step waits on the host.",
    ]
    return "\n".join(lines) + "\n"


def plot(recs, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ok = [r for r in recs if "ms" in r]
    workloads = [w for w in WORKLOADS if any(r["workload"] == w for r in ok)]
    sides = [s for s in SIDE_ORDER if any(r["side"] == s for r in ok)]
    by = {(r["workload"], r["side"]): r["ms"] for r in ok}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(len(sides), 1)
    for i, s in enumerate(sides):
        xs = [j + i * width for j in range(len(workloads))]
        ax.bar(xs, [by.get((w, s), 0) for w in workloads], width, label=SIDE_NAMES[s])
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))])
    ax.set_xticklabels(workloads, rotation=15)
    ax.set_yscale("log")
    ax.set_ylabel("ms per step (token for decode), log scale")
    devices = sorted({r.get("device_name", "") for r in ok} - {"cpu"})
    ax.set_title(f"bench models on {', '.join(devices) or 'the host'} (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def render(out):
    out = Path(out)
    recs = load(out)
    (out / "models.json").write_text(json.dumps(recs, indent=1))
    md = markdown(recs)
    (out / "models.md").write_text(md)
    plot(recs, out / "models.png")
    return md
