"""Timing shared by the sweep harnesses (sweep_conv_bn.py, sweep_depthwise.py,
sweep_lanes.py, argmax_rescan.py): ms per call from a CUDA graph or by do_bench, a
bandwidth line beside the run's device-to-device copy, and a stand-in for
ops/_tune.py's `tuned` that times every candidate and remembers the best three and the
rule's first."""

from triton.testing import do_bench, do_bench_cudagraph


def bench(fn, smoke=False):
    """ms per call of fn replayed from a CUDA graph: the kernels' time, not the host's
    (standalone launches run Python on every call); smoke (the interpreter): one call, 1.0."""
    if smoke:
        fn()
        return 1.0
    fn()  # compiles, allocates the cached scratch (arrival counters)
    try:
        return do_bench_cudagraph(fn, rep=40)
    except Exception:  # noqa: BLE001 -- not capturable: plain timing (host included)
        import torch

        torch.cuda.synchronize()
        return do_bench(fn, warmup=10, rep=60)


def plain_bench(fn, smoke=False):
    """ms per call by triton's do_bench (launches from the host, L2 flushed between
    calls); smoke (the interpreter): one call, 1.0."""
    if smoke:
        fn()
        return 1.0
    return do_bench(fn, warmup=25, rep=200)


class Bandwidth:
    """This run's device-to-device copy (256 MiB; 1 MiB in a dry run), printed, and lines
    of us, GB/s and share of it."""

    def __init__(self, dev, timer, width=48):
        import torch

        src = torch.empty(1 << (20 if dev == "cpu" else 28), dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        self.copy = 2 * src.numel() / timer(lambda: dst.copy_(src)) / 1e6  # GB/s
        self.width = width
        print(f"device {dev} copy {self.copy:.0f} GB/s", flush=True)

    def row(self, name, ms, nbytes):
        bw = nbytes / ms / 1e6
        pct = 100 * bw / self.copy
        print(f"  {name:<{self.width}} {ms * 1e3:8.1f} us {bw:7.0f} GB/s {pct:5.1f}%", flush=True)


def time_all(picked, timer):
    """A `tuned(family, key, candidates, run, device)` that times every candidate with
    `timer` and fills `picked`: "rule" (the first candidate's ms), "best" and "top"
    ((ms, cfg) pairs); it returns the best configuration."""

    def tune_all(family, key, candidates, run, device):
        cands = list(dict.fromkeys(tuple(c) for c in candidates))
        times = []
        for cfg in cands:
            try:
                times.append((timer(lambda cfg=cfg: run(cfg)), cfg))
            except Exception as e:  # noqa: BLE001
                print(f"    {cfg}: {type(e).__name__}: {str(e)[:80]}", flush=True)
        times.sort()
        first = [t for t in times if t[1] == cands[0]]
        picked.update(rule=first[0][0] if first else float("nan"), best=times[0], top=times[:3])
        return times[0][1]

    return tune_all


def report(label, t_ref, t_ours, picked, err):
    """A sweep's line for one shape: torch's and our op's us, the ratio, the best and the
    rule's candidate us, our error, the best three candidates."""
    top = ", ".join(f"{cfg}:{t * 1e3:.1f}" for t, cfg in picked["top"])
    print(
        f"  {label}: {t_ref * 1e3:.1f} | {t_ours * 1e3:.1f} | {t_ref / t_ours:.2f}x | "
        f"{picked['best'][0] * 1e3:.1f} / {picked['rule'] * 1e3:.1f} | err {err:.1e} | {top}",
        flush=True,
    )
    return t_ref / t_ours


def profile_kernels(label, fn):
    """Each GPU kernel one call of fn launches, with its us (torch.profiler)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows = [
        (e.name, e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
        for e in prof.events()
        if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type)
    ]
    print(f"    {label} kernels: " + ", ".join(f"{n[:40]} {t:.1f}" for n, t in rows), flush=True)


def bn_operands(batch, c, hw, fmt, dev):
    """A ResNet-50 batch norm's operands (bf16 activations, fp32 parameters and running
    stats): (x, dy, weight, bias, running mean, running var, batch mean, batch invstd),
    x and dy in memory format `fmt`."""
    import torch

    x = torch.randn(batch, c, hw, hw, device=dev, dtype=torch.bfloat16)
    x = x.contiguous(memory_format=fmt)
    dy = torch.randn_like(x)
    wt, bs = torch.rand(c, device=dev) + 0.5, torch.randn(c, device=dev)
    rm, rv = torch.zeros(c, device=dev), torch.ones(c, device=dev)
    var, mean = torch.var_mean(x.float(), [0, 2, 3], correction=0)
    return x, dy, wt, bs, rm, rv, mean, torch.rsqrt(var + 1e-5)


def bn_calls(ops, bn=None):
    """(forward, backward) calls of a training batch norm on bn_operands' `ops`: torch's
    (F.batch_norm, aten.native_batch_norm_backward), or with `bn` (ops/batch_norm.py)
    ours (bn_forward, bn_backward)."""
    import torch

    x, dy, wt, bs, rm, rv, mean, inv = ops
    if bn is None:
        return (
            lambda: torch.nn.functional.batch_norm(x, rm, rv, wt, bs, True, 0.1, 1e-5),
            lambda: torch.ops.aten.native_batch_norm_backward(
                dy, x, wt, rm, rv, mean, inv, True, 1e-5, [True, True, True]
            ),
        )
    return (
        lambda: bn.bn_forward(x, wt, bs, rm, rv, True, 0.1, 1e-5),
        lambda: bn.bn_backward(dy, x, wt, mean, inv, True, 1e-5, [True, True, True], False),
    )


def flag_gems():
    """FlagGems' module where it is installed (the GPU machine, from carried wheels), else
    None."""
    try:
        import flag_gems as fg
    except ImportError:
        return None
    return fg


def softmax_lines(rows, cols, dt, dev, row, timer):
    """The common lines of a softmax sweep (sweep_lanes.py, rows_prefetch.py): a random
    (rows, cols) input of `dt`, then torch's, FlagGems' (where installed) and the shipped
    kernel's time by `timer`, each as `row` prints it. Returns (x, y, the float32
    reference, bytes moved)."""
    import torch

    from torch_ext.ops import softmax

    x = torch.randn(rows, cols, device=dev, dtype=dt)
    y = torch.empty_like(x)
    ref = torch.softmax(x.float(), 1)
    nbytes = 2 * x.numel() * x.element_size()
    print(f"softmax {rows}x{cols} {dt}", flush=True)
    row("torch", timer(lambda: torch.softmax(x, 1)), nbytes)
    fg = flag_gems()
    if fg is not None:
        with fg.use_gems():
            row("FlagGems", timer(lambda: torch.softmax(x, 1)), nbytes)
    ms = timer(lambda: softmax.softmax_out(x, 1, False, y))
    row(f"* shipped err {(y.float() - ref).abs().max().item():.1e}", ms, nbytes)
    return x, y, ref, nbytes


def rms_lines(rows, cols, dev, row, timer):
    """The common lines of an fp16 RMS norm sweep (rows_prefetch.py, rows_evict.py): a
    random (rows, cols) input and weight, then torch's, FlagGems' (where installed) and
    the shipped kernel's time by `timer`, each as `row` prints it. Returns (x, w, y,
    rstd, the float32 reference, bytes moved, eps)."""
    import torch
    import torch.nn.functional as F

    from torch_ext.ops import normalization as norm

    dt = torch.float16
    x = torch.randn(rows, cols, device=dev, dtype=dt)
    w = torch.rand(cols, device=dev, dtype=dt) + 0.5
    y = torch.empty_like(x)
    rstd = torch.empty(rows, device=dev, dtype=torch.float32)
    ref = F.rms_norm(x.float(), (cols,), w.float())
    nbytes = 2 * x.numel() * x.element_size()
    print(f"rms_norm {rows}x{cols} {dt}", flush=True)
    row("torch", timer(lambda: F.rms_norm(x, (cols,), w)), nbytes)
    fg = flag_gems()
    if fg is not None:
        with fg.use_gems():
            row("FlagGems", timer(lambda: F.rms_norm(x, (cols,), w)), nbytes)
    eps = torch.finfo(dt).eps
    ms = timer(lambda: norm._norm_forward(x, w, None, rows, cols, eps, True, y, None, rstd))
    row(f"* shipped diff {(y.float() - ref).abs().max().item():.1e}", ms, nbytes)
    return x, w, y, rstd, ref, nbytes, eps
