"""Times every case on one implementation, in its own process.

    python -m bench.worker --impl ours|torch|compile|flaggems --out results.jsonl

Each implementation runs in a process of its own: Triton's active driver is
process-global, and ours replaces it (torch_ext launches on privateuseone
streams), so FlagGems and torch_ext must not share a process. One JSON line is
written per case as soon as it is measured, so a worker that is stopped still
leaves what it measured.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

import torch

from bench import cases as suite


class Impl:
    """How to reach one implementation's device: tensors, events, sync."""

    def __init__(self, name, device_type):
        self.name = name
        self.device_type = device_type
        self.module = getattr(torch, device_type) if device_type != "cpu" else None

    @property
    def device(self):
        return (
            torch.device(self.device_type, 0) if self.device_type != "cpu" else torch.device("cpu")
        )

    def sync(self):
        if self.module is not None:
            self.module.synchronize()

    def event(self):
        if self.module is None or not hasattr(self.module, "Event"):
            return None
        return self.module.Event(enable_timing=True)

    def call(self, fn, *args):
        return fn(*args)

    def wrap(self, fn):
        """The callable this side times for a case's function."""
        return fn

    def spin(self, ns):
        """Keeps this side's current stream busy for `ns` nanoseconds (a GPU
        spin kernel), so that what is queued next starts only once the host
        has queued all of it."""
        if self.module is None or not self.on_gpu():
            return
        global _spin_kernel
        if _spin_kernel is None:
            _spin_kernel = _make_spin_kernel()
        if self._spin_flag is None:
            self._spin_flag = torch.zeros(1, dtype=torch.int64, device=self.device)
        _spin_kernel[(1,)](self._spin_flag, ns)

    _spin_flag = None

    def on_gpu(self):
        if self.device_type == "privateuseone":
            import torch_ext

            return torch_ext.driver_name() == "cuda"
        return self.device_type == "cuda"

    def describe(self):
        if self.module is None:
            return {"device": "cpu"}
        name = self.module.get_device_name(0) if hasattr(self.module, "get_device_name") else "?"
        return {"device": f"{self.device_type}:0", "device_name": name}


def _make_spin_kernel():
    # Imported here, on a GPU only: importing triton before torch_ext would fix
    # Triton's library functions in compiled mode while the host driver runs
    # kernels in the interpreter (the CPU dry run).
    import triton
    import triton.language as tl

    @triton.jit
    def spin(flag, ns):
        t0 = tl.inline_asm_elementwise(
            "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
        )
        t = t0
        while t - t0 < ns:
            t = tl.inline_asm_elementwise(
                "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
            )
        tl.store(flag, t - t0)

    return spin


_spin_kernel = None


class FlagGems(Impl):
    def __init__(self):
        super().__init__("flaggems", "cuda")
        import flag_gems

        self.flag_gems = flag_gems
        self.version = getattr(flag_gems, "__version__", "?")
        # use_gems() for the whole process: each call then goes through
        # FlagGems' registrations, as a user who enables it gets.
        flag_gems.enable()


class Compiled(Impl):
    """torch.compile (Inductor, default mode) of each case's function on torch's device:
    one compiled graph per case and input shape, compiled before the timed calls."""

    def __init__(self, torch_device):
        super().__init__("compile", torch_device)

    def wrap(self, fn):
        return torch.compile(fn, dynamic=False)


def make_impl(name, torch_device):
    if name == "torch":
        return Impl("torch", torch_device)
    if name == "compile":
        return Compiled(torch_device)
    if name == "flaggems":
        return FlagGems()
    if name == "ours":
        os.environ.setdefault("TORCH_EXT_FALLBACK", "error")
        import torch_ext  # noqa: F401  (registers torch.privateuseone)

        return Impl("ours", "privateuseone")
    raise SystemExit(f"unknown implementation {name!r}")


def to_device(inputs, device):
    return tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)


def kernel_ms(impl, fn, args, budget_ms=300.0, max_reps=200):
    """Median device time of one call, measured with events on the impl's own
    current stream (as triton.testing.do_bench does); wall-clock + sync where
    the device has no events (the CPU dry run)."""
    fn(*args)
    impl.sync()
    probe_start = time.perf_counter()
    for _ in range(3):
        fn(*args)
    impl.sync()
    estimate_ms = max((time.perf_counter() - probe_start) * 1e3 / 3, 1e-3)
    reps = int(max(5, min(max_reps, budget_ms / estimate_ms)))
    times = []
    if impl.event() is None:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(*args)
            impl.sync()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times), reps
    # Host time to queue one call (no sync): each timed call waits behind a GPU
    # spin about twice that long, so the device runs the call's kernels back to
    # back rather than idling while the host prepares them. Kernel time is then
    # the device's time alone; the host's cost is host_us.
    t0 = time.perf_counter()
    for _ in range(3):
        fn(*args)
    queue_ns = (time.perf_counter() - t0) / 3 * 1e9
    impl.sync()
    spin_ns = int(min(max(2 * queue_ns, 20e3), 2e6))
    starts = [impl.event() for _ in range(reps)]
    ends = [impl.event() for _ in range(reps)]
    for s, e in zip(starts, ends):
        impl.spin(spin_ns)
        s.record()
        fn(*args)
        e.record()
    impl.sync()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return statistics.median(times), reps


def host_us(impl, fn, args, calls=2000):
    """Wall time per call, many calls back to back, then one sync: for tiny
    tensors this is the host's cost per op (dispatch + launch)."""
    for _ in range(20):
        fn(*args)
    impl.sync()
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        impl.sync()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def copy_gbps(impl, scale):
    """Device-to-device copy bandwidth (bytes read + written), the reference
    for memory-bound ops."""
    n = max(1, int(256 * suite.M * scale))
    src = torch.randn(n).to(impl.device)
    dst = torch.empty_like(src)
    ms, _ = kernel_ms(impl, lambda a, b: b.copy_(a), (src, dst))
    return 2 * src.numel() * src.element_size() / (ms * 1e-3) / 1e9


def same_copy_ms(impl, nbytes, dtype):
    """Device time of a device-to-device copy that moves `nbytes` (half read, half
    written) in `dtype`: the reference for a kernel too small to reach the copy
    bandwidth of a large copy (launch and tail bound, as the copy itself is)."""
    n = max(1, nbytes // 2 // dtype.itemsize)
    src = torch.zeros(n, dtype=dtype).to(impl.device)
    dst = torch.empty_like(src)
    ms, _ = kernel_ms(impl, lambda a, b: b.copy_(a), (src, dst))
    return ms


def fingerprint(out):
    """Summary of an output for cross-implementation checks (on the CPU, in
    float64)."""
    if isinstance(out, (tuple, list)):
        out = out[0]
    x = out.detach().to("cpu").double()
    return {
        "sum": float(x.sum()),
        "abs_sum": float(x.abs().sum()),
        "numel": x.numel(),
        "shape": list(out.shape),
    }


def run_case(impl, case, scale, small_calls):
    rec = {
        "op": case.op,
        "shape": case.shape,
        "dtype": str(case.dtype).replace("torch.", ""),
        "matrix": case.matrix,
    }
    try:
        cpu_inputs = case.make(case.dtype, scale)
        args = to_device(cpu_inputs, impl.device)
        fn = impl.wrap(case.fn)
        out = impl.call(fn, *args)
        impl.sync()
        rec["check"] = fingerprint(out)
        describe = getattr(case, "describe", None)  # e.g. the attention backend torch picks
        if describe is not None:
            rec["note"] = describe(*args)
        ms, reps = kernel_ms(impl, fn, args)
        rec.update(kernel_ms=ms, reps=reps)
        rec["bytes"] = suite.input_bytes(cpu_inputs) + suite.output_bytes(out)
        if "gather" in case.tags:  # only the gathered rows are read
            rec["bytes"] = 2 * suite.output_bytes(out)
        if "same_copy" in case.tags:
            rec["copy_same_ms"] = same_copy_ms(impl, rec["bytes"], case.dtype)
        if case.flops:
            rec["flops"] = case.flops(cpu_inputs)
        del args, out
        tiny = to_device(suite.tiny_inputs(case), impl.device)
        rec["small_shape"] = [list(t.shape) for t in tiny if isinstance(t, torch.Tensor)]
        rec["host_us"] = host_us(impl, fn, tiny, calls=small_calls)
    except Exception as e:  # reported as n/a with the reason, never faked
        rec["error"] = (
            f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
        )
        rec["traceback"] = traceback.format_exc()[-2000:]
    return rec


def conv_cases_shard(cases, spec):
    from bench.conv_cases import shard

    return shard(cases, spec)


def selected(case, wanted):
    """Whether --ops's tokens take a case: its op's name, or (a token with a space) a
    part of "op shape"; every case when there are none."""
    label = f"{case.op} {case.shape}"
    return not wanted or case.op in wanted or any(" " in w and w in label for w in wanted)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--impl", required=True, choices=["ours", "torch", "compile", "flaggems"])
    p.add_argument("--out", required=True)
    p.add_argument(
        "--torch-device", default="cuda", help="device of the 'torch' peer (cpu: dry run)"
    )
    p.add_argument("--scale", type=float, default=1.0, help="shrink every shape (dry runs)")
    p.add_argument("--small-calls", type=int, default=2000)
    p.add_argument(
        "--ops",
        default="",
        help="comma-separated subset: op names, or parts of 'op shape' with a space "
        "('conv_wgrad resnet50 3->64')",
    )
    p.add_argument("--suite", default="ops", choices=["ops", "conv", "transformer"])
    p.add_argument("--shard", default="", help="i/n: every n-th case from the i-th")
    args = p.parse_args(argv)

    impl = make_impl(args.impl, args.torch_device)
    torch.manual_seed(0)
    wanted = set(filter(None, args.ops.split(",")))
    with open(args.out, "w") as f:

        def emit(rec):
            f.write(json.dumps(rec) + "\n")
            f.flush()

        meta = {
            "meta": True,
            "impl": impl.name,
            **impl.describe(),
            "torch": torch.__version__,
            "python": sys.version.split()[0],
        }
        try:
            import triton

            meta["triton"] = triton.__version__
        except ImportError:
            pass
        if isinstance(impl, FlagGems):
            meta["flaggems"] = impl.version
        try:
            meta["copy_gbps"] = copy_gbps(impl, args.scale)
        except Exception as e:
            meta["copy_error"] = f"{type(e).__name__}: {e}"[:300]
        emit(meta)
        if args.suite == "conv":
            from bench import conv_cases

            cases = conv_cases.conv_cases()
        elif args.suite == "transformer":
            from bench import transformer_cases

            cases = transformer_cases.transformer_cases()
        else:
            cases = suite.large_cases() + suite.norm_cases()
        for case in conv_cases_shard(cases, args.shard):
            if not selected(case, wanted):
                continue
            t0 = time.perf_counter()
            rec = run_case(impl, case, args.scale, args.small_calls)
            rec["impl"] = impl.name
            rec["wall_s"] = time.perf_counter() - t0
            emit(rec)
            status = rec.get("error") or f"{rec['kernel_ms']:.4f} ms, {rec['host_us']:.1f} us/call"
            print(f"[{impl.name}] {case.op} {case.shape} {rec['dtype']}: {status}", flush=True)


if __name__ == "__main__":
    main()
