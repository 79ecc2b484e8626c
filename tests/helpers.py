"""Helpers shared by every test directory: the device constant, tolerances by
dtype (DESIGN.md §5 / seed 004's method: a float64 CPU reference, atol scaled
by the reduced size), CPU-reference comparison for dispatcher-level tests
(`check`, `assert_close`, `grads`, `train_matches_cpu`), the same for bare
kernels (`assert_kernel_close`, `randn`, `to_ref`), and `run_python` for
snippets that need a fresh interpreter.

Importing this module does not import torch_ext (tests/ops decide, in their
conftest, whether the compiled extension or a stand-in package is used);
`REGISTERED` imports it on first use."""

import os
import subprocess
import sys
import textwrap

import torch
from torch.utils._pytree import tree_flatten, tree_map

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV = "privateuseone"  # the extension's device, for dispatcher-level tests
# Kernel-level tests (tests/ops) run on this device; tests/ops/conftest.py documents it.
KERNEL_DEVICE = os.environ.get("TORCH_EXT_TEST_DEVICE", "cpu")

RTOL = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1.3e-6, torch.float64: 1e-7}
ATOL = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5, torch.float64: 1e-7}
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
INT_DTYPES = [torch.int32, torch.int64, torch.int16]


def __getattr__(name):
    if name == "REGISTERED":
        # aten overloads with a PrivateUse1 kernel ("add.Tensor", "relu", ...).
        import torch_ext  # noqa: F401  (registers the device and its kernels)

        regs = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
        value = {n[len("aten::") :] for n in regs if n.startswith("aten::")}
        globals()["REGISTERED"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- dispatcher level: privateuseone against CPU ---------------------------


def _dev(x):
    if isinstance(x, torch.Tensor):
        return x.to(DEV)
    if isinstance(x, torch.device) or x == "cpu":  # a device= argument
        return torch.device(DEV)
    return x


def to_dev(tree):
    return tree_map(_dev, tree)


def to_f64(tree):
    """Floating tensors as float64 (the reference's precision); others as they are."""
    return tree_map(
        lambda x: x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x, tree
    )


def on_device(tree) -> bool:
    return any(isinstance(t, torch.Tensor) and t.device.type == DEV for t in tree_flatten(tree)[0])


def assert_close(res, ref, dtype=None, reduce=1, ref_same=None, msg="", check_dtype=True):
    """res (device) against ref (CPU): floating results within the tolerance of
    `dtype` (the compute dtype; res.dtype by default), atol scaled by `reduce`;
    integer and bool results exactly (against `ref_same`, the same-dtype CPU
    result, when given)."""
    if isinstance(res, (tuple, list)):
        assert isinstance(ref, (tuple, list)) and len(res) == len(ref), (type(res), type(ref))
        rs = ref_same if ref_same is not None else [None] * len(ref)
        for i, (a, b, c) in enumerate(zip(res, ref, rs)):
            assert_close(a, b, dtype, reduce, c, f"{msg}[{i}]", check_dtype)
        return
    if not isinstance(res, torch.Tensor):
        if isinstance(res, float) and isinstance(ref, float):
            tol = ATOL[dtype or torch.float32] * reduce + RTOL[dtype or torch.float32] * abs(ref)
            assert abs(res - ref) <= tol or (res != res and ref != ref), (msg, res, ref)
        else:
            assert res == ref, (msg, res, ref)
        return
    assert isinstance(ref, torch.Tensor), (msg, type(ref))
    assert res.device.type == DEV, (msg, res.device)
    assert res.shape == ref.shape, (msg, res.shape, ref.shape)
    res = res.detach().cpu()
    if not res.dtype.is_floating_point and not res.is_complex():
        exp = ref_same if ref_same is not None else ref
        assert res.dtype == exp.dtype, (msg, res.dtype, exp.dtype)
        torch.testing.assert_close(res, exp.detach(), rtol=0, atol=0, msg=lambda m: f"{msg}: {m}")
        return
    if ref_same is not None and check_dtype:
        assert res.dtype == ref_same.dtype, (msg, res.dtype, ref_same.dtype)
    dtype = dtype if dtype is not None and dtype.is_floating_point else res.dtype
    atol = ATOL[dtype] * reduce
    rtol = RTOL[dtype]

    def close(expected):
        # The reference rounded to the result's dtype (overflow to inf included).
        torch.testing.assert_close(
            res.double(),
            expected.detach().to(res.dtype).double(),
            atol=atol,
            rtol=rtol,
            equal_nan=True,
            check_dtype=False,
            msg=lambda m: f"{msg}: {m}",
        )

    try:
        close(ref)
    except AssertionError:
        # fp16/bf16 composites round their intermediates: PyTorch's own CPU
        # result in the same dtype is the reference then.
        if ref_same is None or ref_same is ref or dtype not in (torch.float16, torch.bfloat16):
            raise
        close(ref_same)


def check(fn, *args, dtype=None, reduce=1, f64=True, **kwargs):
    """fn(*args) on the device against fn on CPU (float64 inputs when f64 and
    the op allows); returns the device result."""
    res = fn(*to_dev(args), **to_dev(kwargs))
    same = fn(*args, **kwargs)
    ref = same
    if f64:
        try:
            ref = fn(*to_f64(args), **to_f64(kwargs))
        except (RuntimeError, TypeError):
            ref = same
    if dtype is None:
        flat = [
            t
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor) and t.is_floating_point()
        ]
        dtype = flat[0].dtype if flat else None
    assert_close(res, ref, dtype, reduce, same)
    return res


def rand(shape, dtype, low=-3.0, high=3.0, noncontig=False):
    if dtype.is_floating_point:
        t = (torch.rand(shape, dtype=torch.float64) * (high - low) + low).to(dtype)
    elif dtype == torch.bool:
        t = torch.randint(0, 2, shape).bool()
    else:
        lo = max(int(low), 0) if dtype == torch.uint8 else max(int(low), -100)
        t = torch.randint(lo, int(high) + 1, shape, dtype=dtype)
    if noncontig and t.dim() >= 2:
        t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t


def grads(fn, *inputs, dtype=torch.float32, reduce=1, const=()):
    """fn on the device and on CPU (float64, and the same dtype) with grads for
    the floating inputs not in `const`; compares the output and the grads."""

    def run(device, cast):
        xs = [
            t.detach()
            .to(device=device, dtype=cast if t.is_floating_point() else t.dtype)
            .requires_grad_(t.is_floating_point() and i not in const)
            for i, t in enumerate(inputs)
        ]
        out = fn(*xs)
        g = torch.linspace(-1, 1, out.numel(), dtype=torch.float64).reshape(out.shape)
        out.backward(g.to(device=device, dtype=out.dtype))
        return out, [x.grad for x in xs if x.requires_grad]

    out, gs = run(DEV, dtype)
    ref_out, ref_gs = run("cpu", torch.float64)
    same_out, same_gs = run("cpu", dtype)
    assert_close(out, ref_out, dtype, reduce, same_out, "forward")
    for i, (g, r, s) in enumerate(zip(gs, ref_gs, same_gs)):
        assert g is not None and g.device.type == DEV
        assert_close(g, r, dtype, reduce, s, f"grad {i}")
    return gs, ref_gs


def fortran(t):
    """A batched column-major copy of t (always a copy), as PyTorch hands its LAPACK-style
    stubs their matrices."""
    return t.mT.clone(memory_format=torch.contiguous_format).mT


def train_matches_cpu(net, x, y, momentum=0.0, steps=3):
    """A few SGD steps of `net` and of a device copy on cross entropy; the
    parameters must agree."""
    import copy
    import torch.nn.functional as F

    net_d = copy.deepcopy(net).to(DEV)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=momentum)
    opt_d = torch.optim.SGD(net_d.parameters(), lr=0.1, momentum=momentum)
    for _ in range(steps):
        for m, o, xx, yy in ((net, opt, x, y), (net_d, opt_d, x.to(DEV), y.to(DEV))):
            o.zero_grad()
            F.cross_entropy(m(xx), yy).backward()
            o.step()
    for p, q in zip(net.parameters(), net_d.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-4)


def same(a, b, **kw):
    """a (device result, or a tuple of them) equals b (CPU) within
    torch.testing.assert_close's default (or the given) tolerances."""
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y, **kw)
        return
    assert a.device.type == DEV, a.device
    torch.testing.assert_close(a.cpu(), b, equal_nan=True, **kw)


# --- kernel level: Triton wrappers called directly (tests/ops) -------------


def to_ref(t):
    """A CPU float64 copy of t (integers and bool kept)."""
    if not isinstance(t, torch.Tensor):
        return t
    t = t.detach().cpu()
    return t.double() if t.is_floating_point() else t


def assert_kernel_close(res, ref, dtype=None, reduce_dim=1, equal_nan=True, atol=None, rtol=None):
    """A kernel's result (any device) against a CPU reference: floating results
    within the tolerance of `dtype` (res.dtype by default), atol scaled by
    `reduce_dim`; integer and bool results exactly, dtype included."""
    res = res.detach().cpu()
    dtype = dtype or res.dtype
    if not dtype.is_floating_point:
        assert res.dtype == ref.dtype, (res.dtype, ref.dtype)
        torch.testing.assert_close(res, ref, rtol=0, atol=0)
        return
    ref = ref.to(res.dtype) if ref.dtype != res.dtype else ref
    atol = ATOL[dtype] * reduce_dim if atol is None else atol
    rtol = RTOL[dtype] if rtol is None else rtol
    torch.testing.assert_close(
        res.double(), ref.double(), atol=atol, rtol=rtol, equal_nan=equal_nan
    )


def randn(shape, dtype, device, low=None, high=None, noncontig=False):
    """Random values of `dtype` on `device` (normal, or uniform in [low, high))."""
    if dtype.is_floating_point:
        t = torch.randn(shape, dtype=torch.float64)
        if low is not None:
            t = torch.rand(shape, dtype=torch.float64) * (high - low) + low
        t = t.to(dtype)
    elif dtype == torch.bool:
        t = torch.randint(0, 2, shape).bool()
    else:
        t = torch.randint(
            -100 if low is None else int(low),
            100 if high is None else int(high),
            shape,
            dtype=dtype,
        )
    if noncontig and t.dim() >= 2:
        t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t.to(device)


# --- subprocesses ------------------------------------------------------------


def run_python(code: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    """Run a snippet in a fresh interpreter with extra environment variables."""
    full_env = dict(os.environ)
    full_env.update({k: str(v) for k, v in env.items()})
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def some_grads(fn, *inputs, **kw):
    """`grads` (device against CPU), asserting there were gradients to compare."""
    gs, ref_gs = grads(fn, *inputs, **kw)
    assert len(gs) == len(ref_gs) and gs


def edge(dtype, *extra):
    """Signed zeros, +-1, large magnitudes, infinities and NaN (and `extra`), in `dtype`."""
    inf, nan = float("inf"), float("nan")
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 20.0, -20.0, 80.0, -80.0, inf, -inf, nan, *extra]
    return torch.tensor(values, dtype=torch.float64).to(dtype)


def bench_shard(out, suite, shard, scale="1e-4"):
    """`python -m bench --suite <suite> --shard <shard>` at a tiny scale, ours (the host
    driver) against torch on the CPU, into `out`: {impl: its case records}."""
    import json
    from pathlib import Path

    cmd = [sys.executable, "-m", "bench", "--suite", suite, "--shard", shard]
    cmd += ["--impls", "ours,torch", "--torch-device", "cpu", "--scale", scale]
    cmd += ["--small-calls", "1", "--out", str(out)]
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {}
    for impl in ("ours", "torch"):
        lines = (Path(out) / f"{impl}.jsonl").read_text().splitlines()
        rows[impl] = [r for r in map(json.loads, lines) if not r.get("meta")]
    return rows


def force_spec(monkeypatch, module, **values):
    """The driver specialisations `values` (name: value) as `module` sees them through its
    `spec`, the others as the active driver gives them: a GPU's choice forced at a size
    the interpreter runs quickly."""
    spec = module.spec
    monkeypatch.setattr(
        module, "spec", lambda name, *a: values[name] if name in values else spec(name, *a)
    )


def stored(shape, transposed, dtype, device):
    """A random (rows, cols) matrix (randn), stored column-major (a transposed view of a
    (cols, rows) tensor) where `transposed`: a weight's x @ W.t() or a gradient's x.t()."""
    rows, cols = shape
    return randn((cols, rows), dtype, device).t() if transposed else randn(shape, dtype, device)


def tuner_picks(monkeypatch, module, marker, tile=0, seen=None):
    """`module`'s tuner (its `tuned`) picks the `tile`-th candidate whose last element is
    `marker` (a kernel's, e.g. matmul_tma.TMA), the first candidate where there is none;
    `seen` collects each call's candidates."""

    def choose(family, key, candidates, run, dev):
        if seen is not None:
            seen.append(list(candidates))
        marked = [c for c in candidates if c[-1] == marker]
        return marked[tile] if marked else candidates[0]

    monkeypatch.setattr(module, "tuned", choose)


def spy_launches(monkeypatch, module):
    """The (kernel, keyword arguments) of each launch `module` makes from now on."""
    calls = []
    launch = module.launch

    def spy(kernel, *args, **kwargs):
        calls.append((kernel, kwargs))
        return launch(kernel, *args, **kwargs)

    monkeypatch.setattr(module, "launch", spy)
    return calls
