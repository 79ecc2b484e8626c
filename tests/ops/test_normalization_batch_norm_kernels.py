"""Kernel-level tests of the normalization family's batch norm (training with
running-stat updates, eval, with and without affine; forward and backward),
called through the registry on `device` (CPU tensors under Triton's
interpreter by default; tests/ops/conftest.py) against PyTorch's CPU
native_batch_norm in float64."""

import pytest
import torch

from helpers import randn, spy_launches, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

aten = torch.ops.aten
F32, BF16 = torch.float32, torch.bfloat16


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (6, 3)], ids=["nchw", "nc"])
def test_native_batch_norm_forward_backward(shape, affine, training, dtype, device):
    x = randn(shape, dtype, device, noncontig=len(shape) == 4)
    w = randn((3,), F32, device) if affine else None
    b = randn((3,), F32, device) if affine else None
    rm, rv = randn((3,), F32, device), randn((3,), F32, device, low=0.5, high=2.0)
    ref_rm, ref_rv = to_ref(rm), to_ref(rv)
    out, mean, invstd = KERNELS["native_batch_norm"](x, w, b, rm, rv, training, 0.1, 1e-5)
    rx = to_ref(x)
    r_out, r_mean, r_invstd = aten.native_batch_norm(
        rx, to_ref(w), to_ref(b), ref_rm, ref_rv, training, 0.1, 1e-5
    )
    n = x.numel() // 3
    assert_close(out, r_out, dtype, reduce_dim=4)
    assert_close(rm, ref_rm, F32, reduce_dim=n)  # running stats updated in place (training)
    assert_close(rv, ref_rv, F32, reduce_dim=n)
    if training:
        assert_close(mean, r_mean, F32, reduce_dim=n)
        assert_close(invstd, r_invstd, F32, reduce_dim=n)
    g = randn(shape, dtype, device)
    mask = [True, affine, affine]
    gi, gw, gb = KERNELS["native_batch_norm_backward"](
        g, x, w, rm, rv, mean, invstd, training, 1e-5, mask
    )
    r_gi, r_gw, r_gb = aten.native_batch_norm_backward(
        to_ref(g), rx, to_ref(w), ref_rm, ref_rv, r_mean, r_invstd, training, 1e-5, mask
    )
    assert_close(gi, r_gi, dtype, reduce_dim=n)
    if affine:
        assert_close(gw, r_gw, F32, reduce_dim=n)
        assert_close(gb, r_gb, F32, reduce_dim=n)


def _one_launch(x):
    """Whether the driver runs batch norm's training forward on x in its one-launch
    kernels."""
    from torch_ext.ops import batch_norm

    x, st = batch_norm._view(x)
    return batch_norm._Plan(x, [st, st]).resident(False) is not None


def _layout(t, layout):
    if layout == "cl":  # channels_last (2-d) / channels_last_3d, by permuting
        perm = [0] + list(range(2, t.dim())) + [1]
        inv = [0, t.dim() - 1] + list(range(1, t.dim() - 1))
        return t.permute(perm).contiguous().permute(inv)
    return t


CASES = [
    ((5, 4), "nchw"),
    ((3, 4, 7), "nchw"),
    ((3, 4, 7), "cl"),
    ((2, 4, 5, 3), "cl"),
    ((2, 4, 3, 2, 3), "nchw"),
    ((2, 4, 3, 2, 3), "cl"),
    ((2, 70, 3, 2), "cl"),  # more channels than one channel tile
]


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("shape,layout", CASES, ids=[f"{len(s)}d-{lay}" for s, lay in CASES])
def test_batch_norm_layouts_counts_and_launches(shape, layout, dtype, device):
    """Every rank and layout, fp32 params with a bf16 input (autocast's mix): forward
    in 2 launches (1 in eval), backward in 2, output in the input's layout."""
    from torch_ext.ops import _launch

    C = shape[1]
    x = _layout(randn(shape, dtype, device) * 3 + 1, layout)
    w, b = randn((C,), F32, device), randn((C,), F32, device)
    rm, rv = randn((C,), F32, device), randn((C,), F32, device, low=0.5, high=2.0)
    ref_rm, ref_rv = to_ref(rm), to_ref(rv)
    n = x.numel() // C
    one = _one_launch(x)  # the driver's one-launch kernels (a GPU's, on small maps)
    for training in (True, False):
        before = _launch.launches()
        out, mean, invstd = KERNELS["native_batch_norm"](x, w, b, rm, rv, training, 0.1, 1e-5)
        assert _launch.launches() - before == (2 if training and not one else 1)
        assert out.stride() == x.stride()
        r_out, r_mean, r_invstd = aten.native_batch_norm(
            to_ref(x), to_ref(w), to_ref(b), ref_rm, ref_rv, training, 0.1, 1e-5
        )
        assert_close(out, r_out, dtype, reduce_dim=4)
        assert_close(rm, ref_rm, F32, reduce_dim=n)
        assert_close(rv, ref_rv, F32, reduce_dim=n)
        g = randn(shape, dtype, device)  # contiguous: another layout than x for "cl"
        before = _launch.launches()
        gi, gw, gb = KERNELS["native_batch_norm_backward"](
            g, x, w, rm, rv, mean, invstd, training, 1e-5, [True, True, True]
        )
        assert _launch.launches() - before == (1 if one else 2)
        r = aten.native_batch_norm_backward(
            to_ref(g), to_ref(x), to_ref(w), ref_rm, ref_rv, r_mean, r_invstd, training, 1e-5,
            [True, True, True],
        )  # fmt: skip
        assert_close(gi, r[0], dtype, reduce_dim=n)
        assert_close(gw, r[1], F32, reduce_dim=n * 4)
        assert_close(gb, r[2], F32, reduce_dim=n * 4)


def test_batch_norm_welford_large_mean(device):
    """A mean far from zero: the Welford merge keeps the variance exact where
    sum-of-squares would cancel."""
    x = (torch.rand(4, 3, 9, 9, dtype=torch.float64) + 1e4).float().to(device)
    out, mean, invstd = KERNELS["native_batch_norm"](x, None, None, None, None, True, 0.1, 1e-5)
    var = to_ref(x).var([0, 2, 3], correction=0)
    torch.testing.assert_close(1 / invstd.double().cpu() ** 2 - 1e-5, var, rtol=2e-3, atol=1e-6)


def test_batch_norm_entry_points(device):
    """_batch_norm_with_update / _no_update / _native_batch_norm_legit(.no_stats) and
    batch_norm_backward agree with native_batch_norm; the .out forms fill their outs."""
    x = randn((3, 4, 5), F32, device)
    w, b = randn((4,), F32, device), randn((4,), F32, device)
    rm, rv = torch.zeros(4, device=device), torch.ones(4, device=device)
    y, m, s, reserve = KERNELS["batch_norm_with_update"](x, w, b, rm, rv, 0.1, 1e-5)
    ref = aten.native_batch_norm(to_ref(x), to_ref(w), to_ref(b), None, None, True, 0.1, 1e-5)
    assert_close(y, ref[0], F32, reduce_dim=15)
    assert reserve.numel() == 0 and reserve.dtype == torch.uint8
    assert_close(rm, ref[1] * 0.1, F32, reduce_dim=15)
    y2, *_ = KERNELS["batch_norm_no_update"](x, w, b, rm, rv, 0.1, 1e-5)
    ref2 = aten.native_batch_norm(to_ref(x), to_ref(w), to_ref(b), to_ref(rm), to_ref(rv),
                                  False, 0.1, 1e-5)  # fmt: skip
    assert_close(y2, ref2[0], F32, reduce_dim=15)
    y3, m3, s3 = KERNELS["native_batch_norm_legit_no_stats"](x, w, b, True, 0.1, 1e-5)
    assert_close(y3, ref[0], F32, reduce_dim=15)
    outs = [torch.empty(0, device=device) for _ in range(3)]
    KERNELS["native_batch_norm_legit_no_stats_out"](x, w, b, True, 0.1, 1e-5, *outs)
    assert_close(outs[0], ref[0], F32, reduce_dim=15)
    assert_close(outs[2], ref[2], F32, reduce_dim=15)
    g = randn((3, 4, 5), F32, device)
    gi, gw, gb = KERNELS["batch_norm_backward"](
        g, x, w, rm, rv, m, s, True, 1e-5, [True, True, True], reserve
    )
    r = aten.native_batch_norm_backward(
        to_ref(g), to_ref(x), to_ref(w), None, None, ref[1], ref[2], True, 1e-5, [True] * 3
    )
    for res, want in zip((gi, gw, gb), r):
        assert_close(res, want, F32, reduce_dim=15)


def _check_train_eval(x, C, dtype, device):
    """Training (running stats updated) and eval forward, then backward of each,
    against PyTorch's CPU kernels in float64."""
    w, b = randn((C,), F32, device), randn((C,), F32, device)
    rm, rv = randn((C,), F32, device), randn((C,), F32, device, low=0.5, high=2.0)
    ref_rm, ref_rv = to_ref(rm), to_ref(rv)
    n = x.numel() // C
    for training in (True, False):
        out, mean, invstd = KERNELS["native_batch_norm"](x, w, b, rm, rv, training, 0.1, 1e-5)
        r_out, r_mean, r_invstd = aten.native_batch_norm(
            to_ref(x), to_ref(w), to_ref(b), ref_rm, ref_rv, training, 0.1, 1e-5
        )
        assert out.stride() == x.stride()
        assert_close(out, r_out, dtype, reduce_dim=4)
        assert_close(rm, ref_rm, F32, reduce_dim=n)
        assert_close(rv, ref_rv, F32, reduce_dim=n)
        if training:
            assert_close(mean, r_mean, F32, reduce_dim=n)
            assert_close(invstd, r_invstd, F32, reduce_dim=n)
        g = randn(x.shape, dtype, device)
        gi, gw, gb = KERNELS["native_batch_norm_backward"](
            g, x, w, rm, rv, mean, invstd, training, 1e-5, [True, True, True]
        )
        r = aten.native_batch_norm_backward(
            to_ref(g), to_ref(x), to_ref(w), ref_rm, ref_rv, r_mean, r_invstd, training, 1e-5,
            [True, True, True],
        )  # fmt: skip
        assert_close(gi, r[0], dtype, reduce_dim=n)
        assert_close(gw, r[1], F32, reduce_dim=n * 4)
        assert_close(gb, r[2], F32, reduce_dim=n * 4)


# Shapes each taking another branch of batch_norm._Plan under the interpreter's tiling:
TILINGS = [
    ((300, 2, 7, 7), "nchw"),  # samples per tile (BN > 1), a partial last sample block, 2 splits
    ((2, 3, 70, 70), "nchw"),  # spatial blocks with a partial last one, 4 splits merged in 2 steps
    ((5, 3, 600), "nchw"),  # 3-d, 128-long blocks, 4 splits of 7 items
    ((1, 2, 40000), "nchw"),  # N == 1: one row axis
    ((3, 5, 9, 13), "nchw"),  # odd sizes, one program per channel block
    ((2, 3, 70, 70), "cl"),  # channels_last, few channels, rows split and merged
    ((3, 130, 5, 5), "cl"),  # channels_last, 3 channel blocks, a partial last one
    ((1, 70, 33), "cl"),  # channels_last, N == 1
    ((4, 5, 1, 1), "nchw"),  # S == 1
]


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("shape,layout", TILINGS, ids=[f"{s}-{lay}" for s, lay in TILINGS])
def test_batch_norm_tilings(shape, layout, dtype, device):
    x = _layout(randn(shape, dtype, device) * 2 + 1, layout)
    _check_train_eval(x, shape[1], dtype, device)


GPU_TILINGS = [
    ((3, 130, 7, 7), "nchw", BF16),  # 4 samples x 16 channels a tile, no split
    ((2, 64, 28, 28), "nchw", F32),  # 128-long spatial blocks of 16 channels, 14 splits
    ((4, 64, 14, 14), "cl", BF16),  # 64 channels x 64 rows, 13 splits
    ((1, 3, 150, 150), "nchw", F32),  # one row axis of 2048-long blocks, 11 splits
]


@pytest.mark.parametrize("shape,layout,dtype", GPU_TILINGS, ids=[str(c) for c in GPU_TILINGS])
def test_batch_norm_gpu_tilings(shape, layout, dtype, device, monkeypatch):
    """The cuda driver's tiling (an H100's 132 multiprocessors) run by the interpreter:
    its splits merge in more rows per step than the interpreter's own."""
    from torch_ext.backends.cuda import spec as cuda_spec
    from torch_ext.ops import batch_norm

    monkeypatch.setattr(cuda_spec, "_sm_count", lambda: 132)
    monkeypatch.setattr(
        batch_norm,
        "spec",
        lambda name, *a: None if name == "batch_norm_resident" else getattr(cuda_spec, name)(*a),
    )
    x = _layout(randn(shape, dtype, device) * 2 + 1, layout)
    _check_train_eval(x, shape[1], dtype, device)


RESIDENT = [  # shape, layout, dtype, multiprocessors (fewer: more channels a program),
    # one launch (training forward, backward)
    ((3, 130, 7, 7), "nchw", BF16, 132, (True, True)),  # 4 x 64 lanes a channel, 1 a program
    ((3, 130, 7, 7), "nchw", F32, 8, (True, True)),  # 16 channels a program, a partial block
    ((3, 10, 7, 7), "cl", torch.float64, 132, (True, True)),  # float64: 4Ki lanes, 4 channels
    ((4, 6, 5, 5), "cl", F32, 2, (True, True)),  # channels_last: rows of 100 (128) x 8 channels
    ((3, 4, 7), "cl", BF16, 1, (True, True)),  # 3-d channels_last, every channel a program
    ((2, 4, 3, 2, 3), "nchw", F32, 4, (True, True)),  # 5-d
    ((6, 3), "nchw", F32, 132, (True, True)),  # (N, C)
    ((2, 64, 28, 28), "nchw", BF16, 132, (True, True)),  # 2 x 1024 lanes
    # 32Ki lanes a channel: the driver's wide lanes (a channel a program)
    ((1, 3, 150, 150), "nchw", F32, 132, (True, True)),
    # 2Ki rows x 8 channels (16 bytes): 16Ki lanes, wide lanes forward; the backward (dy
    # contiguous, x channels_last: no common row axis) a channel of 16 x 128 a program
    ((13, 8, 9, 9), "cl", BF16, 132, (True, True)),
    ((1, 2, 200, 200), "nchw", F32, 132, (False, False)),  # 64Ki lanes: two launches each way
    ((3, 10, 40, 40), "nchw", torch.float64, 132, (False, False)),  # float64 has no wide lanes
]


@pytest.mark.parametrize("shape,layout,dtype,sms,one", RESIDENT, ids=[str(c) for c in RESIDENT])
def test_batch_norm_one_launch(shape, layout, dtype, sms, one, device, monkeypatch):
    """The cuda driver's one-launch kernels for maps whose channels fit a program: the
    training forward (statistics, running stats, y) and the backward (dweight, dbias,
    dx; training and eval) in one launch each, reading x (and dy) once, up to the
    driver's wide lanes; maps past them keep two launches."""
    from torch_ext.backends.cuda import spec as cuda_spec
    from torch_ext.ops import batch_norm

    monkeypatch.setattr(cuda_spec, "_sm_count", lambda: sms)
    monkeypatch.setattr(batch_norm, "spec", lambda name, *a: getattr(cuda_spec, name)(*a))
    x = _layout(randn(shape, dtype, device) * 2 + 1, layout)
    assert _one_launch(x) == one[0]
    launched = spy_launches(monkeypatch, batch_norm)
    _check_train_eval(x, shape[1], dtype, device)
    kernels = [k for k, _ in launched]
    if one[0]:  # the training forward in one launch, the eval forward in one (pointwise)
        assert kernels[0] == batch_norm._bn_resident_fwd_kernel
        assert batch_norm._bn_apply_kernel in kernels[1:]
    else:  # the training forward in two
        assert kernels[:2] == [batch_norm._bn_stats_kernel, batch_norm._bn_apply_kernel]
    # train backward and eval backward: one launch each, or sums then dx each
    resident_bwd = kernels.count(batch_norm._bn_resident_bwd_kernel)
    assert resident_bwd == (2 if one[1] else 0)
    assert kernels.count(batch_norm._bn_bwd_dx_kernel) == (0 if one[1] else 2)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_one_launch_masks(affine, device, monkeypatch):
    """The one-launch kernels without running stats or weights, and each gradient alone."""
    from torch_ext.backends.cuda import spec as cuda_spec
    from torch_ext.ops import batch_norm

    monkeypatch.setattr(cuda_spec, "_sm_count", lambda: 4)
    monkeypatch.setattr(batch_norm, "spec", lambda name, *a: getattr(cuda_spec, name)(*a))
    x = randn((3, 5, 4, 3), F32, device) * 2 + 1
    w = randn((5,), F32, device) if affine else None
    b = randn((5,), F32, device) if affine else None
    out, mean, invstd = KERNELS["native_batch_norm"](x, w, b, None, None, True, 0.1, 1e-5)
    r_out, r_mean, r_invstd = aten.native_batch_norm(
        to_ref(x), to_ref(w), to_ref(b), None, None, True, 0.1, 1e-5
    )
    assert_close(out, r_out, F32, reduce_dim=36)
    g = randn(x.shape, F32, device)
    masks = [[True, False, False]] + (
        [[False, True, False], [False, False, True]] if affine else []
    )
    for mask in masks:
        got = KERNELS["native_batch_norm_backward"](
            g, x, w, None, None, mean, invstd, True, 1e-5, mask
        )
        want = aten.native_batch_norm_backward(
            to_ref(g), to_ref(x), to_ref(w), None, None, r_mean, r_invstd, True, 1e-5, mask
        )
        for on, a, r in zip(mask, got, want):
            assert (a is None) == (not on)
            if on:
                assert_close(a, r, F32, reduce_dim=36)


@pytest.mark.parametrize("layout", ["nchw", "cl"])
def test_batch_norm_split_merge_deterministic(layout, device):
    """The split reductions merge their partials in a fixed order: bitwise equal runs."""
    x = _layout(randn((2, 3, 70, 70), F32, device) * 2 + 1, layout)
    g = randn((2, 3, 70, 70), F32, device)
    w = randn((3,), F32, device)
    runs = []
    for _ in range(2):
        out, mean, invstd = KERNELS["native_batch_norm"](x, w, None, None, None, True, 0.1, 1e-5)
        grads = KERNELS["native_batch_norm_backward"](
            g, x, w, None, None, mean, invstd, True, 1e-5, [True, True, True]
        )
        runs.append([out, mean, invstd, *grads])
    for a, b in zip(*runs):
        assert torch.equal(a.cpu(), b.cpu())


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("shape,layout", [((5, 4), "nchw"), ((3, 4, 7), "cl"),
                                          ((2, 70, 3, 2), "cl"), ((2, 4, 5, 3), "nchw")])  # fmt: skip
def test_one_launch_kernels_with_a_barrier(monkeypatch, shape, layout, dtype, device):
    """The one-launch kernels whose programs meet at a barrier (batch_norm_coop.py), run
    with one program per channel block (the interpreter runs programs one after another:
    a block of several would wait forever): training forward and backward against the
    reference, running stats updated, the barrier's counters re-armed."""
    from torch_ext.ops import _launch, batch_norm
    from helpers import force_spec

    force_spec(monkeypatch, batch_norm, batch_norm_coop=(1 << 40, 1), multiprocessors=1,
               batch_norm_resident=None)  # fmt: skip
    monkeypatch.setattr(batch_norm, "COOP_MIN_SPLIT", 1)
    calls = spy_launches(monkeypatch, batch_norm)
    c = shape[1]
    x = _layout(randn(shape, dtype, device), layout)
    w, b = randn((c,), F32, device), randn((c,), F32, device)
    rm, rv = randn((c,), F32, device), randn((c,), F32, device, low=0.5, high=2.0)
    ref_rm, ref_rv = to_ref(rm), to_ref(rv)
    out, mean, invstd = KERNELS["native_batch_norm"](x, w, b, rm, rv, True, 0.1, 1e-5)
    r_out, r_mean, r_invstd = aten.native_batch_norm(
        to_ref(x), to_ref(w), to_ref(b), ref_rm, ref_rv, True, 0.1, 1e-5
    )
    n = x.numel() // c
    assert_close(out, r_out, dtype, reduce_dim=n)
    assert_close(mean, r_mean, F32, reduce_dim=n)
    assert_close(invstd, r_invstd, F32, reduce_dim=n)
    assert_close(rm, ref_rm, F32, reduce_dim=n)
    assert_close(rv, ref_rv, F32, reduce_dim=n)
    g = _layout(randn(shape, dtype, device), layout)
    gi, gw, gb = KERNELS["native_batch_norm_backward"](
        g, x, w, rm, rv, mean, invstd, True, 1e-5, [True, True, True]
    )
    r_gi, r_gw, r_gb = aten.native_batch_norm_backward(
        to_ref(g), to_ref(x), to_ref(w), ref_rm, ref_rv, r_mean, r_invstd, True, 1e-5,
        [True, True, True],
    )  # fmt: skip
    assert_close(gi, r_gi, dtype, reduce_dim=n)
    assert_close(gw, r_gw, F32, reduce_dim=n)
    assert_close(gb, r_gb, F32, reduce_dim=n)
    names = [k.fn.__name__ for k, _ in calls if hasattr(k, "fn")]
    assert names == ["_bn_coop_fwd_kernel", "_bn_coop_bwd_kernel"], names
    counters = _launch.arrival_counters("batch_norm_coop", x.device)
    assert int(counters.cpu().abs().sum()) == 0  # re-armed by the last program to leave


def test_no_barrier_of_several_programs_in_the_interpreter(monkeypatch, device):
    """Under Triton's interpreter (programs one after another) a channel block of several
    programs at a barrier would wait forever: with the GPU's spec forced, the plan keeps
    the two-launch kernels there; one program a block may still take them."""
    from torch_ext.ops import batch_norm
    from helpers import force_spec

    # the same tiling on every driver: 2 items of 16 x 1024 a channel, 64 channel blocks
    force_spec(monkeypatch, batch_norm, batch_norm_coop=(1 << 40, 4), multiprocessors=64,
               batch_norm_tiling=batch_norm._INTERPRETER_TILING)  # fmt: skip
    x = randn((32, 64, 32, 32), BF16, device)
    v, st = batch_norm._view(x)
    plan = batch_norm._Plan(v, [st, st])
    assert plan.items == 2
    assert (plan.coop(False) is None) == batch_norm._interpreted()  # on a GPU: taken
    force_spec(monkeypatch, batch_norm, batch_norm_coop=(1 << 40, 1), multiprocessors=1)
    monkeypatch.setattr(batch_norm, "COOP_MIN_SPLIT", 1)
    assert plan.coop(False)[0][1] == 1


def test_other_streams_keep_two_launches(monkeypatch, device):
    """The one-launch kernels' barrier counters are the device's: on a stream other than
    the default one (where another launch could run at the same time) batch norm keeps
    the two launches, on the default stream it takes the one."""
    from torch_ext.ops import batch_norm
    from helpers import force_spec

    force_spec(monkeypatch, batch_norm, batch_norm_coop=(1 << 40, 1), multiprocessors=1,
               batch_norm_resident=None)  # fmt: skip
    monkeypatch.setattr(batch_norm, "COOP_MIN_SPLIT", 1)
    calls = spy_launches(monkeypatch, batch_norm)
    x = randn((4, 3, 5, 2), F32, device)
    rm, rv = randn((3,), F32, device), randn((3,), F32, device, low=0.5, high=2.0)
    with torch.privateuseone.stream(torch.privateuseone.Stream()):
        side, _, _ = KERNELS["native_batch_norm"](x, None, None, rm, rv, True, 0.1, 1e-5)
    torch.privateuseone.synchronize()
    names = [k.fn.__name__ for k, _ in calls if hasattr(k, "fn")]
    assert "_bn_coop_fwd_kernel" not in names and "_bn_apply_kernel" in names, names
    calls.clear()
    main, _, _ = KERNELS["native_batch_norm"](x, None, None, rm, rv, True, 0.1, 1e-5)
    names = [k.fn.__name__ for k, _ in calls if hasattr(k, "fn")]
    assert names == ["_bn_coop_fwd_kernel"], names
    assert_close(side, to_ref(main), F32, reduce_dim=40)


@pytest.mark.parametrize("layout", ["nchw", "cl"])
def test_pipelined_item_loops(monkeypatch, layout, device):
    """The split reductions and the normalise / dx launches with the driver's pipeline
    stages (batch_norm_stages: the cuda driver's 4 stages from 12 items a program,
    forced here at any count): the stages reach the item loops' launches, the results
    are the reference's."""
    from torch_ext.ops import batch_norm
    from torch_ext.backends.cuda import spec as cuda_spec
    from helpers import force_spec

    assert cuda_spec.batch_norm_stages(2, 12) == 4 and cuda_spec.batch_norm_stages(2, 11) == 1
    force_spec(monkeypatch, batch_norm, batch_norm_stages=4, batch_norm_resident=None,
               batch_norm_coop=None)  # fmt: skip
    calls = spy_launches(monkeypatch, batch_norm)
    x = _layout(randn((2, 3, 40, 40), F32, device) * 3 + 1, layout)
    g = _layout(randn((2, 3, 40, 40), F32, device), layout)
    w, b = randn((3,), F32, device), randn((3,), F32, device)
    out, mean, invstd = KERNELS["native_batch_norm"](x, w, b, None, None, True, 0.1, 1e-5)
    grads = KERNELS["native_batch_norm_backward"](
        g, x, w, None, None, mean, invstd, True, 1e-5, [True, True, True]
    )
    r_out, r_mean, r_invstd = aten.native_batch_norm(
        to_ref(x), to_ref(w), to_ref(b), None, None, True, 0.1, 1e-5
    )
    r_grads = aten.native_batch_norm_backward(
        to_ref(g), to_ref(x), to_ref(w), None, None, r_mean, r_invstd, True, 1e-5,
        [True, True, True],
    )  # fmt: skip
    n = x.numel() // 3
    assert_close(out, r_out, F32, reduce_dim=n)
    assert_close(invstd, r_invstd, F32, reduce_dim=n)
    for a, r in zip(grads, r_grads):
        assert_close(a, r, F32, reduce_dim=n)
    stages = {k.fn.__name__: kw["ST"] for k, kw in calls if hasattr(k, "fn")}
    assert stages == {"_bn_stats_kernel": 4, "_bn_apply_kernel": 1,
                      "_bn_bwd_sums_kernel": 4, "_bn_bwd_dx_kernel": 1}, stages  # fmt: skip


@pytest.mark.parametrize("shape,layout", [((32, 64, 112, 112), "nchw"), ((32, 256, 56, 56), "cl"),
                                          ((32, 5, 300, 300), "nchw")])  # fmt: skip
def test_split_grid_is_one_wave(shape, layout, monkeypatch):
    """The cuda driver's split reductions (ResNet-50's largest maps, and a channel count
    that does not divide the programs): at most its programs, all resident at once with
    the register cap the launch gets (H200: 64Ki registers a multiprocessor)."""
    from torch_ext.backends.cuda import spec as cuda_spec
    from torch_ext.ops import batch_norm

    monkeypatch.setattr(cuda_spec, "_sm_count", lambda: 132)
    monkeypatch.setattr(batch_norm, "spec", lambda name, *a: getattr(cuda_spec, name)(*a))
    x = _layout(torch.empty(shape, dtype=BF16), layout)
    v, st = batch_norm._view(x)
    p = batch_norm._Plan(v, [st])
    programs = cuda_spec.batch_norm_tiling(2, layout == "cl")[1]
    assert programs == (2 if layout == "cl" else 4) * 132
    assert p.split > 1 and p.cblocks * p.split <= programs
    per_sm = programs // 132
    assert p.maxnreg >= 64 and per_sm * 32 * p.warps * p.maxnreg <= 65536


def test_no_register_cap_under_64(monkeypatch):
    """Where the driver's programs a multiprocessor would leave fewer than 64 registers a
    thread (a tiling of more programs than the device holds at once, as tests force one
    multiprocessor on a GPU), the split launches take no cap: the compiler's choice, no
    spills (a cap of 0 failed ptxas on an H200)."""
    from torch_ext.backends.cuda import spec as cuda_spec
    from torch_ext.ops import batch_norm

    monkeypatch.setattr(cuda_spec, "_sm_count", lambda: 132)
    spec = lambda name, *a: 1 if name == "multiprocessors" else getattr(cuda_spec, name)(*a)  # noqa: E731
    monkeypatch.setattr(batch_norm, "spec", spec)
    x = torch.empty((32, 64, 112, 112), dtype=BF16)
    v, st = batch_norm._view(x)
    assert batch_norm._Plan(v, [st]).maxnreg is None


@pytest.mark.parametrize("channels,hw,layout,per_sm", [(64, 56, "cl", 1), (256, 28, "cl", 1),
                                                       (512, 28, "cl", 2), (128, 28, "nchw", 2)])  # fmt: skip
def test_coop_programs_per_multiprocessor(channels, hw, layout, per_sm, monkeypatch):
    """The cuda driver's barrier kernels: one program a multiprocessor for channels_last
    maps of at most 256 channels (fewer partials to merge), two otherwise; the grid stays
    within what the device holds at once."""
    from torch_ext.backends.cuda import spec as cuda_spec
    from torch_ext.ops import batch_norm

    monkeypatch.setattr(cuda_spec, "_sm_count", lambda: 132)
    monkeypatch.setattr(batch_norm, "_default_stream", lambda device: True)
    monkeypatch.setattr(batch_norm, "_interpreted", lambda: False)
    monkeypatch.setattr(batch_norm, "spec", lambda name, *a: getattr(cuda_spec, name)(*a))
    x = _layout(torch.empty((32, channels, hw, hw), dtype=BF16), layout)
    v, st = batch_norm._view(x)
    p = batch_norm._Plan(v, [st])
    assert cuda_spec.batch_norm_coop(2, False, layout == "cl", channels)[1] == per_sm
    grid, per, _ = p.coop(False)
    assert grid[0] * grid[1] <= per_sm * 132 and grid[1] > 1
