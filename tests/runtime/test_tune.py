"""Tile configurations chosen by timing (torch_ext/ops/_tune.py): the fastest candidate
is kept, remembered in a file a later process reads, not timed under deterministic
algorithms or with the switch off, and a tuning call's plan recording is retried."""

import json
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import torch_ext
from helpers import DEV, run_python
from torch_ext.ops import _tune

C = torch_ext._C
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tuning(tmp_path, monkeypatch):
    """Tuning on (the host driver's default is off), choices in a file of this test."""
    path = tmp_path / "autotune" / "dev.json"
    monkeypatch.setenv("TORCH_EXT_AUTOTUNE", "on")
    monkeypatch.setattr(_tune, "cache_file", lambda device: str(path))
    _tune.forget()
    yield path
    _tune.forget()


def fake(delays):
    """A run(cfg) that takes delays[cfg] seconds (the host driver's events time the host),
    counting its timed calls per configuration (the cuda driver's precompile threads
    call it too, to compile: there it does nothing)."""
    calls = {cfg: 0 for cfg in delays}

    def run(cfg):
        if _tune.compiling():
            return
        calls[cfg] += 1
        if delays[cfg] is None:
            raise RuntimeError("out of resources")
        torch.ones(4, device=DEV).add_(1)  # something on the device's stream
        time.sleep(delays[cfg])

    return run, calls


def test_fastest_candidate_is_kept_and_remembered(tuning):
    run, calls = fake({(1,): 0.04, (2,): 0.0, (3,): 0.02})
    dev = torch.device(DEV)
    assert _tune.tuned("t", ("k", 1), [(1,), (2,), (3,)], run, dev) == (2,)
    # each timed once, then (three finalists) twice more
    assert all(n == 3 * (_tune._REPS + 2) for n in calls.values()), calls
    assert _tune.tuned("t", ("k", 1), [(1,), (2,), (3,)], run, dev) == (2,)
    assert sum(calls.values()) == 9 * (_tune._REPS + 2)  # not timed again
    assert json.loads(tuning.read_text())["entries"] == {"t|k,1": [2]}


def test_finalists_are_timed_again_and_judged_by_median(tuning):
    """The three fastest of a first timing are timed twice more; a candidate whose first
    timing was a lucky outlier loses to one that is fast every time, and the slower
    candidates are not timed again."""
    per_timing = {  # seconds per launch in the 1st, 2nd and 3rd timing of each
        (1,): [0.0, 0.02, 0.02],  # lucky once
        (2,): [0.005, 0.005, 0.005],
        (3,): [0.01, 0.01, 0.01],
        (4,): [0.03],
        (5,): [0.03],
    }
    calls = {cfg: 0 for cfg in per_timing}

    def run(cfg):
        if _tune.compiling():  # the cuda driver's precompile threads
            return
        k = calls[cfg] // (_tune._REPS + 2)  # which timing of this candidate
        calls[cfg] += 1
        torch.ones(4, device=DEV).add_(1)
        time.sleep(per_timing[cfg][k])

    assert _tune.tuned("t", ("f",), list(per_timing), run, torch.device(DEV)) == (2,)
    n = _tune._REPS + 2
    assert calls == {(1,): 3 * n, (2,): 3 * n, (3,): 3 * n, (4,): n, (5,): n}


def test_another_process_reads_the_file(tuning):
    run, _ = fake({(1,): 0.03, (2,): 0.0})
    _tune.tuned("t", ("k",), [(1,), (2,)], run, torch.device(DEV))
    _tune.forget()  # as a new process: only the file
    run2, calls = fake({(1,): 0.0, (2,): 0.03})
    assert _tune.tuned("t", ("k",), [(1,), (2,)], run2, torch.device(DEV)) == (2,)
    assert sum(calls.values()) == 0 and _tune.stats["tuned"] == 0


def test_changed_candidates_and_unreadable_files_are_timed_again(tuning):
    tuning.parent.mkdir(parents=True)
    tuning.write_text("{not json")
    run, calls = fake({(1,): 0.03, (2,): 0.0, (5,): 0.0})
    assert _tune.tuned("t", ("k",), [(1,), (2,)], run, torch.device(DEV)) == (2,)
    assert json.loads(tuning.read_text())["entries"] == {"t|k": [2]}  # rewritten
    # (2,) is no longer a candidate: measured again among the new list
    assert _tune.tuned("t", ("k",), [(1,), (5,)], run, torch.device(DEV)) == (5,)


def test_a_failing_candidate_is_skipped_and_the_heuristic_error_raised(tuning):
    run, _ = fake({(1,): 0.0, (2,): None})
    assert _tune.tuned("t", ("a",), [(1,), (2,)], run, torch.device(DEV)) == (1,)
    run, _ = fake({(1,): None, (2,): None})
    with pytest.raises(RuntimeError, match="out of resources"):
        _tune.tuned("t", ("b",), [(1,), (2,)], run, torch.device(DEV))


@pytest.mark.parametrize("how", ["off", "deterministic"])
def test_nothing_is_timed_when_off_or_deterministic(tuning, monkeypatch, how):
    run, calls = fake({(1,): 0.03, (2,): 0.0})
    if how == "off":
        monkeypatch.setenv("TORCH_EXT_AUTOTUNE", "off")
    torch.use_deterministic_algorithms(how == "deterministic")
    try:
        assert _tune.tuned("t", ("k",), [(1,), (2,)], run, torch.device(DEV)) == (1,)
    finally:
        torch.use_deterministic_algorithms(False)
    assert sum(calls.values()) == 0 and not tuning.exists()


def test_auto_times_nothing_on_the_host_driver(tuning, monkeypatch):
    monkeypatch.setenv("TORCH_EXT_AUTOTUNE", "auto")
    assert _tune.enabled() is (torch_ext._C._driver_name() == "cuda")


def test_convolutions_tuned_once_per_key_and_equal_to_cpu(tuning):
    """Forward, input and weight gradients each tune once (every candidate computes the
    same result); the call after tuning records a plan and the next replays it. Eight
    input channels: the forward and weight gradient of ops/conv_igemm_flat.py."""
    x = torch.randn(2, 8, 9, 9, dtype=torch.float64)
    w = torch.randn(16, 8, 3, 3, dtype=torch.float64)
    xd = x.float().to(DEV).requires_grad_()
    wd = w.float().to(DEV).requires_grad_()
    before = dict(C._plan_stats())
    for _ in range(3):
        y = F.conv2d(xd, wd, padding=1, stride=2)
        y.backward(torch.ones_like(y))
    assert _tune.stats["tuned"] == 3, _tune.stats
    entries = json.loads(tuning.read_text())["entries"]
    assert sorted(k.split("|")[1].split(",")[0] for k in entries) == [
        "dgrad",
        "flat_fwd",
        "flat_wgrad",
    ]
    assert dict(C._plan_stats())["replayed"] > before["replayed"]
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    yr = F.conv2d(xr, wr, padding=1, stride=2)
    yr.backward(torch.ones_like(yr))
    torch.testing.assert_close(y.detach().cpu().double(), yr.detach(), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(xd.grad.cpu().double() / 3, xr.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(wd.grad.cpu().double() / 3, wr.grad, atol=1e-4, rtol=1e-4)


def test_a_fresh_process_reuses_the_choices(tmp_path):
    """Two processes with one cache directory: the second times nothing."""
    code = """
        import torch, torch.nn.functional as F, torch_ext
        from torch_ext.ops import _tune
        x = torch.randn(2, 4, 8, 8, device="privateuseone")
        w = torch.randn(8, 4, 3, 3, device="privateuseone")
        F.conv2d(x, w, padding=1).cpu()
        print("tuned", _tune.stats["tuned"])
    """
    env = dict(TORCH_EXT_AUTOTUNE="on", TORCH_EXT_CACHE_DIR=str(tmp_path))
    first = run_python(code, **env)
    assert first.returncode == 0 and "tuned 1" in first.stdout, first.stderr[-2000:]
    files = list((tmp_path / "autotune").glob("*.json"))
    assert len(files) == 1, files
    second = run_python(code, **env)
    assert second.returncode == 0 and "tuned 0" in second.stdout, second.stderr[-2000:]


def _conv_matches_cpu(x, w, b, args):
    """conv2d's output and gradients on the device (float32) equal the CPU's (float64)."""
    y = F.conv2d(x, w, b, **args)
    g = torch.randn_like(y)
    ref = torch.autograd.grad(y, (x, w, b), g)
    xd, wd, bd = (t.detach().float().to(DEV).requires_grad_() for t in (x, w, b))
    yd = F.conv2d(xd, wd, bd, **args)
    got = torch.autograd.grad(yd, (xd, wd, bd), g.float().to(DEV))
    torch.testing.assert_close(yd.detach().cpu().double(), y.detach(), atol=1e-4, rtol=1e-4)
    for a, r in zip(got, ref):
        torch.testing.assert_close(a.cpu().double(), r, atol=1e-3, rtol=1e-4)


@pytest.mark.parametrize("pick", range(5))
def test_every_convolution_candidate_computes_the_result(monkeypatch, pick):
    """Whichever configuration the timing picks, forward, input and weight gradients
    (grouped, strided, dilated, with bias) equal the CPU's."""
    from torch_ext.ops import conv_igemm, conv_igemm_bwd

    def choose(family, key, candidates, run, device):
        return list(candidates)[min(pick, len(candidates) - 1)]

    monkeypatch.setattr(conv_igemm, "tuned", choose)
    monkeypatch.setattr(conv_igemm_bwd, "tuned", choose)
    C._plan_clear()  # another pick's recorded launches (same shapes) would replay
    x = torch.randn(2, 6, 11, 10, dtype=torch.float64, requires_grad=True)
    w = torch.randn(130, 3, 3, 2, dtype=torch.float64, requires_grad=True)
    b = torch.randn(130, dtype=torch.float64, requires_grad=True)
    args = dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    _conv_matches_cpu(x, w, b, args)


@pytest.mark.parametrize("pick", range(6))
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_every_depthwise_candidate_computes_the_result(monkeypatch, pick, layout):
    """The depthwise kernels' configurations (channel and row blocks, warps) each give
    the CPU's forward, input and weight gradients; 24 channels in channels_last take the
    aligned loads (vec_of 8), the candidates' channel blocks cover them partly."""
    from torch_ext.ops import conv_depthwise

    def choose(family, key, candidates, run, device):
        assert family == "dwconv"
        return list(candidates)[min(pick, len(candidates) - 1)]

    monkeypatch.setattr(conv_depthwise, "tuned", choose)
    C._plan_clear()  # another pick's recorded launches (same shapes) would replay
    fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(3, 24, 9, 11, dtype=torch.float64).contiguous(memory_format=fmt)
    w = torch.randn(24, 1, 3, 3, dtype=torch.float64).contiguous(memory_format=fmt)
    b = torch.randn(24, dtype=torch.float64)
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_()
    if layout == "channels_last":
        assert conv_depthwise.vec_of(24, x) == 8
    args = dict(stride=(2, 1), padding=1, groups=24)
    _conv_matches_cpu(x, w, b, args)


_PRECOMPILE = """
import json, os, sys, threading
import triton.experimental.gluon  # noqa: F401
import torch
import torch_ext
os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, os.path.join(sys.argv[1], "tests_gpu", "harness"))
import compile_only
compile_only.use()
from torch_ext.ops import _launch, _tune
sys.path.insert(0, sys.argv[2])
from kmod import scale  # (a @triton.jit function must come from a file)

x, y = torch.empty(64), torch.empty(64)
threads = set()


def run(cfg):
    threads.add(threading.get_ident())
    if cfg == 5:
        raise RuntimeError("out of resources")  # skipped here, met again when timed
    _launch.launch(scale, (1,), x, y, 64, FACTOR=cfg, BLOCK=64)


_tune.active_driver = lambda: "cuda"  # a driver that compiles (its GPU: compile_only)
launched = _launch.launches()
used = _tune.precompile([1, 2, 3, 4, 5], run, torch.device("privateuseone", 0))
# a nested tuned op while compiling takes the heuristic's choice, untimed
with _launch.compiling_only():
    nested = _tune.tuned("conv", (1,), [(7,), (8,)], lambda cfg: 1 / 0, torch.device("cpu"))
print(json.dumps({
    "used": used, "threads": len(threads), "compiled": torch_ext.compile_stats()["compiled"],
    "launched": _launch.launches() - launched, "nested": list(nested),
    "after": _launch.compiling(),
}))
"""


def test_candidates_compile_side_by_side_and_run_nothing(tmp_path):
    """Before timing, each candidate's kernels compile in threads of their own
    (`_launch.compiling_only`: real sm_90 compiles through a driver that cannot launch):
    every candidate compiled once, nothing launched or counted, a failing candidate
    skipped, a nested tuned op untimed, the switch back off after."""
    (tmp_path / "kmod.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def scale(x, y, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):\n"
        "    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(y + i, tl.load(x + i, mask=i < n) * FACTOR, mask=i < n)\n"
    )
    code = _PRECOMPILE.replace("sys.argv[1]", repr(str(REPO)))
    r = run_python(
        code.replace("sys.argv[2]", repr(str(tmp_path))),
        TORCH_EXT_DRIVER="host",
        TRITON_CACHE_DIR=tmp_path / "triton",
        TORCH_EXT_CACHE_DIR=tmp_path / "torch_ext",
        TORCH_EXT_COMPILE_PROGRESS="0",
        TORCH_EXT_COMPILE_THREADS="4",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["used"] == 4 and got["threads"] > 1, got
    assert got["compiled"] == 4, got  # FACTOR 1..4, each once
    assert got["launched"] == 0 and got["nested"] == [7] and got["after"] is False, got


def test_precompile_is_skipped_where_kernels_are_interpreted(monkeypatch):
    monkeypatch.setenv("TORCH_EXT_COMPILE_THREADS", "4")
    ran = []
    monkeypatch.setattr(_tune, "active_driver", lambda: "host")
    assert _tune.precompile([(1,), (2,)], ran.append, DEV) == 0  # the host driver
    assert ran == []
    monkeypatch.setenv("TORCH_EXT_COMPILE_THREADS", "1")
    monkeypatch.setattr(_tune, "active_driver", lambda: "cuda")
    assert _tune.precompile([(1,), (2,)], ran.append, DEV) == 0  # one thread: none ahead
    assert ran == []


def test_timed_launches_queue_behind_the_stream_hold(monkeypatch):
    """A candidate's warm-up launch runs first, then the stream is held (a GPU spin on
    the cuda driver, nothing on the host driver), then the timed launches: the order
    that makes the timing the device's, not the host's."""
    events = []
    monkeypatch.setattr(_tune, "_hold_stream", lambda device, ns: events.append(("hold", ns)))

    def run(cfg):
        events.append("run")
        time.sleep(0.002)  # a candidate whose host side takes 2 ms a call

    _tune._time(run, (1,), DEV)
    assert events[:2] == ["run", "run"] and events[3:] == ["run"] * _tune._REPS
    hold, queue_ns = events[2]
    assert hold == "hold" and queue_ns >= 2e6 * _tune._REPS  # the host's time to queue them


def test_the_hold_covers_the_host_time_to_queue(monkeypatch):
    """The spin lasts the driver's time or twice the host's queueing time, at most 50 ms."""
    spins = []
    monkeypatch.setattr(
        _tune, "spec", lambda name, *a: 2_000_000 if name == "tune_spin_ns" else None
    )
    monkeypatch.setattr(_tune, "launch", lambda kernel, grid, flag, ns: spins.append(ns))
    monkeypatch.setattr(_tune, "spin_kernel", lambda: "spin")
    for queue_ns in (0, 5e6, 1e9):
        _tune._hold_stream(torch.device(DEV), queue_ns)
    assert spins == [2_000_000, 10_000_000, 50_000_000]


def test_the_host_driver_holds_nothing(monkeypatch):
    """No spin kernel on the host driver (its interpreter has no timer register)."""
    from torch_ext.ops import _spin

    monkeypatch.setattr(_spin, "spin_kernel", lambda: pytest.fail("spin on the host driver"))
    _tune._hold_stream(torch.device(DEV))


_FIRST_MADE_COMPILING = """
import torch, torch_ext
from torch_ext.ops import _launch, matmul
dev = torch.device("privateuseone", 0)
real_spec = matmul.spec
matmul.spec = lambda n, *a: 2 if n == "mm_split_k" else real_spec(n, *a)
a, b = torch.randn(20, 300), torch.randn(300, 36)
da, db = a.to(dev), b.to(dev)
out = torch.zeros(20, 36, device=dev)
junk = [torch.empty(_launch.ARRIVALS, dtype=torch.int32, device=dev) for _ in range(4)]
for j in junk:
    j.fill_(7)
del junk, j  # memory the allocator hands out next
with _launch.compiling_only():  # what a precompile thread's run(cfg) does
    matmul.mm_out(da, db, out)
counters = _launch.arrival_counters("split_k", dev)  # the ones mm_out made
print("made", int(counters.cpu().abs().sum()))
matmul.mm_out(da, db, out)
print("error", float((out.cpu() - a @ b).abs().max()), "after", int(counters.cpu().abs().sum()))
"""


def test_state_first_made_in_a_precompile_thread_is_zeroed():
    """Tuning's precompile runs candidates where kernels compile and do not run
    (`_launch.compiling_only`); persistent state an op makes on first use there must
    still start at zero. Session 22: the split-K arrival counters, zero-filled by a
    kernel that never ran, held old memory, and the tuned products came out NaN or
    wrong on an H200. A fresh process (the allocator's cache as a first use meets it):
    the counters made there are zero, and a product split in K is right after."""
    r = run_python(_FIRST_MADE_COMPILING, TORCH_EXT_DRIVER="host")
    assert r.returncode == 0, r.stderr[-3000:]
    made, error, after = r.stdout.split()[1::2]
    assert int(made) == 0 and int(after) == 0, r.stdout
    assert float(error) < 1e-3, r.stdout
