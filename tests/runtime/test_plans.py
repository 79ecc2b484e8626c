"""Launch plans (csrc/launch/Plan.h): the first call with a key records the
op's device work, later calls replay it from C++. On the host driver the
replay runs the recorded kernel objects, so these tests check the plans the
GPU replays: results, keys, temporaries, results that are operands, and the
calls that must stay on Python."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext
from helpers import DEV as DEVICE

C = torch_ext._C


def stats():
    return dict(C._plan_stats())


@pytest.fixture(autouse=True)
def fresh_plans():
    assert C._plan_enabled()
    C._plan_clear()


def delta(before):
    now = stats()
    return {k: now[k] - before[k] for k in ("recorded", "replayed", "uncacheable", "slow")}


# One call per family: (name, function of CPU inputs, input shapes).
CASES = [
    ("add", lambda a, b: a + b, [(33, 17), (33, 17)]),
    ("mul_broadcast", lambda a, b: a * b, [(8, 1, 5), (7, 5)]),
    ("gelu", lambda a: F.gelu(a), [(9, 31)]),
    ("sum_dim", lambda a: a.sum(1), [(12, 40)]),
    ("mean_all", lambda a: a.mean(), [(12, 40)]),
    ("amax", lambda a: a.amax(-1), [(5, 6, 7)]),
    ("softmax", lambda a: torch.softmax(a, -1), [(6, 50)]),
    ("log_softmax", lambda a: torch.log_softmax(a, 0), [(6, 50)]),
    ("layer_norm", lambda a: F.layer_norm(a, (24,)), [(5, 24)]),
    ("mm", lambda a, b: a @ b, [(16, 24), (24, 8)]),
    ("bmm", lambda a, b: torch.bmm(a, b), [(3, 8, 5), (3, 5, 6)]),
    ("addmm", lambda c, a, b: torch.addmm(c, a, b), [(7,), (4, 9), (9, 7)]),
    ("cat", lambda a, b: torch.cat([a, b], 1), [(4, 5), (4, 3)]),
    ("strided", lambda a: a.t() * 2, [(13, 7)]),
    ("cumsum", lambda a: torch.cumsum(a, 1), [(3, 21)]),
    ("sort", lambda a: torch.sort(a, -1)[0], [(4, 19)]),
    ("topk", lambda a: torch.topk(a, 3).values, [(4, 19)]),
    ("conv2d", lambda x, w: F.conv2d(x, w, padding=1), [(1, 2, 6, 6), (3, 2, 3, 3)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), [(1, 2, 6, 6)]),
    ("mse_loss", lambda a, b: F.mse_loss(a, b), [(6, 7), (6, 7)]),
    (
        "sdpa",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        [(1, 2, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16)],
    ),
    ("where", lambda a, b: torch.where(a > 0, a, b), [(10, 3), (10, 3)]),
    ("embedding", lambda w: F.embedding(torch.tensor([[1, 4], [2, 0]]).to(w.device), w), [(6, 5)]),
    ("index_select", lambda a: a.index_select(0, torch.tensor([2, 0]).to(a.device)), [(4, 6)]),
    ("gather", lambda a: a.gather(1, torch.tensor([[0, 2], [1, 1]]).to(a.device)), [(2, 3)]),
    ("cross_entropy", lambda a: F.cross_entropy(a, torch.tensor([1, 0, 3]).to(a.device)), [(3, 5)]),
    ("group_norm", lambda x: F.group_norm(x, 2), [(2, 4, 5)]),
    ("avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2), [(2, 3, 11)]),
    ("interpolate", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), [(1, 2, 3, 4)]),
    ("pad", lambda x: F.pad(x, (1, 2), mode="reflect"), [(2, 3, 6)]),
    ("argmax", lambda a: a.argmax(1), [(5, 9)]),
    ("var", lambda a: a.var(0), [(7, 3)]),
    ("norm", lambda a: torch.linalg.vector_norm(a, 2, 1), [(4, 9)]),
    (
        "baddbmm",
        lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5),
        [(2, 3, 4), (2, 3, 5), (2, 5, 4)],
    ),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), [(10, 3)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_recorded_then_replayed_with_new_data(name, fn, shapes, monkeypatch):
    # No tuning: on the cuda driver a first convolution times its candidates, and a
    # call that tunes is not kept as a plan (ops/_tune.py), so nothing would be recorded.
    monkeypatch.setenv("TORCH_EXT_AUTOTUNE", "off")
    torch.manual_seed(0)
    before = stats()
    for i in range(3):
        xs = [torch.randn(s) for s in shapes]
        got = fn(*[x.to(DEVICE) for x in xs]).cpu()
        torch.testing.assert_close(got, fn(*xs), rtol=1e-4, atol=1e-4)
        d = delta(before)
        if i == 0:
            first = d
            assert d["recorded"] >= 1, f"{name}: nothing recorded ({d})"
    d = delta(before)
    # Calls two and three record nothing new and replay what call one recorded.
    assert d["recorded"] == first["recorded"], d
    assert d["replayed"] >= 2 * first["recorded"], d
    assert d["uncacheable"] == first["uncacheable"], d


def test_replay_launches_from_cpp():
    a, b = torch.randn(20, 20), torch.randn(20, 20)
    da, db = a.to(DEVICE), b.to(DEVICE)
    torch.softmax(da @ db, -1)
    launched = stats()["launched"]
    torch.softmax(da @ db, -1)
    assert stats()["launched"] > launched  # the replay counted its launches


def test_out_variant_returns_the_out_tensor_and_inplace_mutates():
    a, b = torch.randn(9, 4), torch.randn(9, 4)
    da, db = a.to(DEVICE), b.to(DEVICE)
    for _ in range(3):
        out = torch.empty(9, 4, device=DEVICE)
        r = torch.mul(da, db, out=out)
        assert r is out
        torch.testing.assert_close(out.cpu(), a * b)
    x = a.clone().to(DEVICE)
    for k in range(3):
        x.add_(db)
    torch.testing.assert_close(x.cpu(), a + 3 * b)


def test_results_that_are_views_and_tuples():
    a = torch.randn(6, 11)
    da = a.to(DEVICE)
    for _ in range(3):
        v, i = torch.max(da, 1)
        torch.testing.assert_close(v.cpu(), a.max(1).values)
        assert torch.equal(i.cpu(), a.max(1).indices)
        m, s = torch.std_mean(da, 1)
        torch.testing.assert_close(m.cpu(), torch.std_mean(a, 1)[0], rtol=1e-5, atol=1e-5)


KEY_VARIANTS = {
    "dtype": lambda: (torch.randn(8, 8, dtype=torch.float64),),
    "rank": lambda: (torch.randn(2, 8, 4),),
    "shape": lambda: (torch.randn(8, 9),),
    "non_contiguous": lambda: (torch.randn(8, 8).t(),),
    "misaligned": lambda: (torch.randn(65)[1:].reshape(8, 8),),
}


@pytest.mark.parametrize("variant", list(KEY_VARIANTS))
def test_each_key_component_gives_its_own_plan(variant):
    base = torch.randn(8, 8)
    torch.softmax(base.to(DEVICE), -1)
    torch.softmax(base.to(DEVICE), -1)
    before = stats()
    (x,) = KEY_VARIANTS[variant]()
    dx = x.to(DEVICE) if variant != "misaligned" else _misaligned(x)
    got = torch.softmax(dx, -1)
    torch.testing.assert_close(got.cpu(), torch.softmax(x, -1))
    assert delta(before)["recorded"] == 1


def _misaligned(x):
    flat = torch.empty(x.numel() + 1, device=DEVICE)
    flat[1:].copy_(x.reshape(-1).to(DEVICE))
    v = flat[1:].view(x.shape)
    assert v.data_ptr() % 16 != 0
    return v


def test_scalar_values_and_global_flags_are_in_the_key():
    a = torch.randn(10)
    da = a.to(DEVICE)
    for alpha in (1.0, 2.0, 2.0, 3.5):
        torch.testing.assert_close(torch.add(da, da, alpha=alpha).cpu(), a + alpha * a)
    before = stats()
    torch.add(da, da, alpha=3.5)
    assert delta(before)["recorded"] == 0
    m = torch.randn(8, 8)
    dm = m.to(DEVICE)
    dm @ dm
    before = stats()
    old = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high" if old == "highest" else "highest")
        # "high" multiplies in TF32 on a GPU (10-bit mantissas)
        torch.testing.assert_close((dm @ dm).cpu(), m @ m, rtol=1e-2, atol=1e-2)
    finally:
        torch.set_float32_matmul_precision(old)
    assert delta(before)["recorded"] == 1


def test_random_ops_stay_fresh_and_reproducible():
    torch.manual_seed(3)
    draws = [torch.rand(100, device=DEVICE).cpu() for _ in range(3)]
    assert not torch.equal(draws[0], draws[1]) and not torch.equal(draws[1], draws[2])
    torch.manual_seed(3)
    again = [torch.rand(100, device=DEVICE).cpu() for _ in range(3)]
    for x, y in zip(draws, again):
        assert torch.equal(x, y)
    before = stats()
    torch.rand(100, device=DEVICE)
    assert delta(before)["replayed"] == 1  # replayed, with a fresh draw
    x = torch.ones(1000, device=DEVICE)
    drops = [F.dropout(x, 0.5).cpu() for _ in range(4)]
    for a, b in zip(drops, drops[1:]):
        assert not torch.equal(a, b)
        assert 0.35 < (a == 0).float().mean() < 0.65
    torch.manual_seed(5)
    first = [F.dropout(x, 0.5).cpu() for _ in range(3)]
    torch.manual_seed(5)
    again = [F.dropout(x, 0.5).cpu() for _ in range(3)]
    for a, b in zip(first, again):
        assert torch.equal(a, b)
    assert not any(k.endswith(": random") for k in stats()["reasons"]), stats()["reasons"]


def test_bounds_errors_still_raised_after_warm_calls():
    w = torch.randn(10, 4).to(DEVICE)
    idx = torch.tensor([1, 2, 3]).to(DEVICE)
    for _ in range(3):
        F.embedding(idx, w)
    with pytest.raises(IndexError):
        F.embedding(torch.tensor([1, 20, 3]).to(DEVICE), w)
        torch.privateuseone.synchronize()


@pytest.fixture
def deferred_bounds(monkeypatch):
    """ops/_bounds.py as on the GPU (flags copied back asynchronously, polled by later
    checked ops), on a fresh ring; the module for setting POLL_INTERVAL_S."""
    from torch_ext.ops import _bounds

    init = _bounds._Ring.__init__

    def deferred(self, device):
        init(self, device)
        self.deferred = True

    monkeypatch.setattr(_bounds, "_rings", {})
    monkeypatch.setattr(_bounds._Ring, "__init__", deferred)
    return _bounds


def test_bounds_errors_reported_late_from_a_replayed_launch(deferred_bounds, monkeypatch):
    """The GPU's way (ops/_bounds.py, deferred): the flags come back by an asynchronous
    copy of the ring and of the plans' slots, and a later checked op raises. A replayed
    launch writes its plan's own slot past the ring: the copy must take it."""
    _bounds = deferred_bounds
    monkeypatch.setattr(_bounds, "POLL_INTERVAL_S", 0.0)
    w = torch.randn(10, 4).to(DEVICE)
    good = torch.tensor([1, 2, 3]).to(DEVICE)
    for _ in range(3):
        F.embedding(good, w)
    ring = _bounds._ring(w.device)
    assert ring.deferred and ring.pinned > 0  # the plan took a slot of its own
    bad = torch.tensor([1, 12, 3]).to(DEVICE)
    with pytest.raises(IndexError, match="index 12 is out of bounds.*earlier launch"):
        F.embedding(bad, w)  # replayed; raised by its own poll or by a later op's
        for _ in range(50):  # each polls the copy the one before started
            F.embedding(good, w)
    torch.privateuseone.synchronize()  # reported once
    assert F.embedding(good, w).cpu().equal(w.cpu()[[1, 2, 3]])


def test_bounds_polls_are_rate_limited_and_synchronize_reports(deferred_bounds, monkeypatch):
    """On the GPU a checked op looks at the flags at most once per POLL_INTERVAL_S (the
    copy-back and its event cost the host per call); synchronize() reports at once."""
    _bounds = deferred_bounds
    monkeypatch.setattr(_bounds, "POLL_INTERVAL_S", 3600.0)
    w = torch.randn(10, 4).to(DEVICE)
    good = torch.tensor([1, 2, 3]).to(DEVICE)
    F.embedding(good, w)  # the first poll: starts a copy
    ring = _bounds._ring(w.device)
    first = ring.polled
    F.embedding(torch.tensor([1, 12, 3]).to(DEVICE), w)
    for _ in range(5):
        F.embedding(good, w)  # within the interval: not looked at
    assert ring.polled == first
    with pytest.raises(IndexError, match="index 12 is out of bounds"):
        torch.privateuseone.synchronize()


def test_replayed_bounds_polls_skip_python_within_the_interval(deferred_bounds, monkeypatch):
    """A replay's bounds poll is rate-limited in C++: within POLL_INTERVAL_S of the last
    one it does not enter Python at all (a call into Python per indexing op cost the GPU
    host path microseconds per op)."""
    _bounds = deferred_bounds
    monkeypatch.setattr(_bounds, "POLL_INTERVAL_S", 3600.0)
    entered = []
    poll = _bounds._Ring.poll
    monkeypatch.setattr(
        _bounds._Ring, "poll", lambda self, wait: (entered.append(wait), poll(self, wait))
    )
    w = torch.randn(10, 4).to(DEVICE)
    good = torch.tensor([1, 2, 3]).to(DEVICE)
    for _ in range(2):
        F.embedding(good, w)  # recorded, then a recording at other values verifies nothing
    before = stats()
    entered.clear()
    for _ in range(20):
        F.embedding(good, w)
    assert delta(before)["replayed"] == 20
    assert len(entered) <= 1  # at most the first replay's, if the interval had passed
    with pytest.raises(IndexError, match="index 12 is out of bounds"):
        F.embedding(torch.tensor([1, 12, 3]).to(DEVICE), w)
        torch.privateuseone.synchronize()  # reports at once, whatever the interval


def test_host_reads_keep_the_call_on_python():
    x = torch.tensor([0.0, 1.0, 0.0, 2.0]).to(DEVICE)
    for _ in range(3):
        nz = torch.nonzero(x)
        assert nz.cpu().reshape(-1).tolist() == [1, 3]


def test_off_switch_keeps_everything_on_python():
    import subprocess
    import sys

    code = (
        "import torch, torch_ext\n"
        "x = torch.randn(10).to('privateuseone')\n"
        "for _ in range(3): (x + x).cpu()\n"
        "s = torch_ext._C._plan_stats()\n"
        "assert not torch_ext._C._plan_enabled() and s['recorded'] == 0 and s['replayed'] == 0, s\n"
    )
    env = dict(__import__("os").environ, TORCH_EXT_FAST_LAUNCH="0")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_storage_sharing_is_in_the_key():
    # Pointers into a storage two operands share resolve against one of them:
    # the same shapes with separate storages must not reuse that plan.
    x = torch.randn(2, 16)
    dx = x.to(DEVICE)
    for _ in range(2):
        torch.testing.assert_close(torch.atan2(dx[0], dx[1]).cpu(), torch.atan2(x[0], x[1]))
    before = stats()
    a, b = torch.randn(16), torch.randn(16)
    torch.testing.assert_close(torch.atan2(a.to(DEVICE), b.to(DEVICE)).cpu(), torch.atan2(a, b))
    assert delta(before)["recorded"] == 1


def test_ops_inside_a_recording_run_python_even_with_plans():
    """An op called while another op records runs its Python even where it has a plan of
    its own: a replay's cuda launches bypass Triton's launcher, so the recording would
    miss them (on the H100 the second linalg.lu_factor then returned unpivoted garbage)."""
    from torch_ext.ops import linalg

    A = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
    LU, _, _ = torch.linalg.lu_factor_ex(A.to(DEVICE))  # PyTorch's layout for LU

    def direct():  # lu_factor's Python at the top level: its ops record and replay plans
        lu = torch.empty_strided(LU.shape, LU.stride(), device=DEVICE).copy_(A)
        piv = torch.empty(2, dtype=torch.int32, device=DEVICE)
        info = torch.empty((), dtype=torch.int32, device=DEVICE)
        linalg.lu_factor(lu, piv, info, True)
        return lu

    C._plan_clear()
    direct()
    before = stats()
    direct()
    assert delta(before)["replayed"] > 10  # the inner ops have plans now
    before = stats()
    got = [torch.linalg.lu_factor_ex(A.to(DEVICE)) for _ in range(2)]  # record, replay
    d = delta(before)
    assert d["recorded"] >= 1 and d["slow"] > 10, d
    steps = [len(s) for key, _, s in C._plan_describe("lu_factor") if key.startswith(b"lu_factor")]
    assert steps and all(n > 20 for n in steps), steps
    for lu, piv, info in got:
        assert lu.cpu().tolist() == [[2.0, 4.0], [0.5, 0.0]] and piv.cpu().tolist() == [2, 2]
        assert info.item() == 2


def test_a_full_cache_evicts_what_is_not_replayed():
    # second chance: at capacity, plans not replayed since the last eviction go (and
    # keys kept on Python); a hot plan stays and is never recorded again
    old = C._plan_set_capacity(8)
    try:
        hot_in = torch.randn(16).to(DEVICE)
        x = torch.randn(7).to(DEVICE)
        cold_in = [float(n) for n in range(5, 34)]  # a scalar's value is in the key
        before = stats()
        ref = hot_in.cpu() * 3
        for c in cold_in:
            torch.testing.assert_close((hot_in * 3).cpu(), ref)  # hot: replayed
            x * c  # cold: a new key every time
            assert stats()["entries"] <= 8
        d = delta(before)
        assert d["recorded"] == 1 + len(cold_in), d  # the hot plan recorded once
        assert d["replayed"] == len(cold_in) - 1
    finally:
        C._plan_set_capacity(old)
