"""`python -m bench host`: per-op host cost, wall microseconds per call.

    python -m bench host                        # ours, torch eager, FlagGems: same run
    python -m bench host --calls 20 --impls ours,torch --torch-device cpu --out /tmp/h

Each op runs `--calls` times back to back on small float32 tensors (1x64 and
64x64), under torch.no_grad(), and the device is synchronised once at the end:
wall time / calls is what one call costs the host when the GPU keeps up, the
number that bounds small-batch models. Each implementation runs in its own
process (`--worker`), like the kernel benchmark's, since ours and FlagGems
both install a Triton driver. Writes host.{json,md} into --out (default:
bench/results/<GPU name>/).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SIZES = ((1, 64), (64, 64))
IMPL_NAMES = {"ours": "torch_ext", "torch": "torch eager", "flaggems": "FlagGems"}


def cases(torch, device, n):
    """(name, fn, args) for rows of width 64 and n rows."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(device)

    x, y, w64 = r(n, 64), r(n, 64), r(64, 64)
    wn, b = torch.ones(64, device=device), torch.zeros(64, device=device)
    idx = torch.randint(0, 64, (n,), generator=g).to(device)  # classes, embedding rows
    rows = torch.randint(0, n, (n,), generator=g).to(device)
    cond = (r(n, 64) > 0).to(device)
    q = r(1, 1, n, 64)
    x3 = r(1, n, 64)
    w3 = r(1, 64, 64)
    param = torch.nn.Parameter(r(n, 64))
    param.grad = r(n, 64)
    opt = torch.optim.AdamW([param], lr=1e-3)
    return [
        ("add", torch.add, (x, y)),
        ("mul", torch.mul, (x, y)),
        ("gelu", F.gelu, (x,)),
        ("softmax", lambda t: torch.softmax(t, -1), (x,)),
        ("layer_norm", lambda t: F.layer_norm(t, (64,), wn, b), (x,)),
        ("rms_norm", lambda t: F.rms_norm(t, (64,), wn), (x,)),
        ("sum(dim)", lambda t: t.sum(-1), (x,)),
        ("mean", torch.mean, (x,)),
        ("amax", lambda t: t.amax(-1), (x,)),
        ("argmax", lambda t: t.argmax(-1), (x,)),
        ("mm", torch.mm, (x, w64)),
        ("linear", lambda t: F.linear(t, w64, b), (x,)),
        ("bmm", torch.bmm, (x3, w3)),
        ("index_select", lambda t: t.index_select(0, rows), (x,)),
        ("embedding", lambda i: F.embedding(i, w64), (idx,)),
        ("cat", lambda a, c: torch.cat([a, c]), (x, y)),
        ("where", torch.where, (cond, x, y)),
        ("cross_entropy", lambda t: F.cross_entropy(t, idx), (x,)),
        ("sdpa", lambda t: F.scaled_dot_product_attention(t, t, t), (q,)),
        ("adamw_step", lambda: opt.step(), ()),
    ]


def worker(impl, torch_device, calls, out, repeats=1):
    import torch

    if impl == "ours":
        import torch_ext  # noqa: F401

        device = torch.device("privateuseone", 0)
    else:
        device = torch.device(torch_device)
        if impl == "flaggems":
            import flag_gems

            flag_gems.enable()
    mod = None if device.type == "cpu" else getattr(torch, device.type)

    def sync():
        if mod is not None:
            mod.synchronize()

    rows = []
    device_name = "cpu" if mod is None else mod.get_device_name(0)
    with torch.no_grad():
        for n in (s[0] for s in SIZES):
            for name, fn, args in cases(torch, device, n):
                row = {"op": name, "shape": f"{n}x64", "impl": impl}
                try:
                    for _ in range(max(3, calls // 20)):
                        fn(*args)
                    sync()
                    per = max(1, calls // repeats)
                    batches = []
                    for _ in range(repeats):
                        t = time.perf_counter()
                        for _ in range(per):
                            fn(*args)
                        sync()
                        batches.append((time.perf_counter() - t) / per * 1e6)
                    row["us"] = statistics.median(batches)
                    row["us_batches"] = batches
                except Exception as e:
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
                rows.append(row)
                # after every row: a worker cut by the timeout keeps what it measured. The
                # rows go to a sibling file renamed over the piece, so a kill mid-write
                # leaves the last whole piece (CI, stop 48: an empty piece lost the run)
                part = Path(str(out) + ".part")
                part.write_text(
                    json.dumps({"impl": impl, "device_name": device_name, "rows": rows})
                )
                os.replace(part, out)


def markdown(results, calls, repeats=1):
    impls = [i for i in IMPL_NAMES if i in results]
    devices = sorted({r["device_name"] for r in results.values()})
    lines = [
        f"# Host cost per op on {', '.join(devices)}",
        "",
        f"Wall µs per call, {calls} calls back to back in {repeats} batches, each ending in a "
        "sync, the median batch; float32, no autograd; each implementation in its own "
        "process, same run.",
        "",
        "| op | shape | " + " | ".join(IMPL_NAMES[i] for i in impls) + " | ours ÷ torch |",
        "|---" * (len(impls) + 3) + "|",
    ]
    table = {i: {(r["op"], r["shape"]): r for r in results[i]["rows"]} for i in impls}
    keys = [(r["op"], r["shape"]) for r in results[impls[0]]["rows"]] if impls else []
    for k in keys:
        cells = []
        for i in impls:
            r = table[i].get(k, {})
            cells.append(f"{r['us']:.1f}" if "us" in r else "fails: " + r.get("error", "?")[:40])
        ours, ref = table.get("ours", {}).get(k, {}), table.get("torch", {}).get(k, {})
        ratio = f"{ours['us'] / ref['us']:.1f}×" if "us" in ours and "us" in ref else "—"
        lines.append(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench host")
    p.add_argument("--impls", default="ours,torch,flaggems")
    p.add_argument("--torch-device", default="cuda")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument(
        "--repeats", type=int, default=5,
        help="the calls in this many batches, each synchronised; a row is their median",
    )  # fmt: skip
    p.add_argument("--out", default=None, help="default: bench/results/<GPU name>/")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    if args.worker:
        worker(args.worker, args.torch_device, args.calls, args.worker_out, args.repeats)
        return 0
    if args.out:
        out = Path(args.out)
    else:
        from bench.models import default_out

        out = default_out()
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    root = Path(__file__).resolve().parent.parent
    for impl in filter(None, args.impls.split(",")):
        if impl == "flaggems":
            import importlib.util

            if importlib.util.find_spec("flag_gems") is None:
                print("FlagGems is not importable: its column is left out", flush=True)
                continue
        piece = out / f"host_{impl}.tmp.json"
        cmd = [sys.executable, "-m", "bench.host", "--worker", impl, "--worker-out", str(piece)]
        cmd += ["--calls", str(args.calls), "--torch-device", args.torch_device]
        cmd += ["--repeats", str(args.repeats)]
        try:
            proc = subprocess.run(
                cmd, cwd=root, timeout=args.timeout, capture_output=True, text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
            tail = (proc.stdout + proc.stderr)[-2000:]
        except subprocess.TimeoutExpired:
            tail = f"timed out after {args.timeout:.0f} s"
        Path(str(piece) + ".part").unlink(missing_ok=True)
        if piece.exists():
            results[impl] = json.loads(piece.read_text())
            piece.unlink()
            if tail.startswith("timed out"):  # the rows it measured stay; the rest say why
                results[impl]["error"] = tail
                done = {(r["op"], r["shape"]) for r in results[impl]["rows"]}
                import torch

                names = [c[0] for c in cases(torch, "cpu", 1)]
                for n in (s[0] for s in SIZES):
                    for op in names:
                        if (op, f"{n}x64") not in done:
                            results[impl]["rows"].append(
                                {"op": op, "shape": f"{n}x64", "impl": impl, "error": tail}
                            )
        else:
            print(f"== host / {impl} failed: {tail}", flush=True)
            results[impl] = {"impl": impl, "device_name": "?", "error": tail, "rows": []}
        # after every implementation: a run cut short keeps the ones that finished
        _write(out, results, args.calls, args.repeats)
    print(_write(out, results, args.calls, args.repeats))
    return 0


def _write(out, results, calls, repeats=1):
    data = {"calls": calls, "repeats": repeats, "results": results}
    (out / "host.json").write_text(json.dumps(data, indent=1))
    md = markdown(results, calls, repeats)
    (out / "host.md").write_text(md)
    return md


if __name__ == "__main__":
    sys.exit(main())
