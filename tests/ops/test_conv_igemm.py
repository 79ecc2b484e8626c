"""ops/conv_igemm.py: the strided adjoint gather by phases (input gradients of
strided convolutions, forwards of strided transposed ones) gives the full gather's
result (the same nonzero products in the same order, to rounding) and the CPU's."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext
from torch_ext.ops import conv_igemm

DEV = "privateuseone"

CASES = [
    # (input shape, weight shape, conv kwargs, transposed)
    ((2, 8, 9, 10), (6, 8, 3, 3), dict(stride=2, padding=1), False),
    ((2, 8, 9, 11), (6, 4, 3, 4), dict(stride=(2, 3), padding=(1, 2), groups=2), False),
    ((2, 8, 7, 6, 5), (4, 8, 3, 1, 2), dict(stride=(2, 1, 2), padding=(0, 0, 1)), False),
    ((2, 8, 13), (6, 8, 1), dict(stride=3), False),
    ((2, 8, 5, 6), (8, 6, 3, 3), dict(stride=2, padding=1, output_padding=1), True),
]
IDS = ["3x3_s2", "grouped_s2x3", "3d", "1x1_s3", "transposed_s2"]


def _run(x, w, b, kw, transposed, phase, monkeypatch):
    """conv's forward and input gradient with every implicit GEMM forced to `phase`
    (the gather by phases, or the full one); counts the phase launches."""
    calls = []
    real = conv_igemm.phase_scatter

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    def choose(family, key, candidates, run, device):
        c = list(candidates)
        return next((t for t in c if len(t) > 6 and t[6] == phase), c[0])

    monkeypatch.setattr(conv_igemm, "phase_scatter", spy)
    monkeypatch.setattr(conv_igemm, "tuned", choose)
    torch_ext._C._plan_clear()  # the other choice's recorded launches would replay
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()]
    if transposed:
        conv = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[x.dim()]
    xd = x.to(DEV).requires_grad_()
    y = conv(xd, w.to(DEV), b.to(DEV), **kw)
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(1)).to(y.dtype)
    (gx,) = torch.autograd.grad(y, xd, g.to(DEV))
    return y.detach().cpu(), gx.cpu(), len(calls), g


@pytest.mark.parametrize("shape,wshape,kw,transposed", CASES, ids=IDS)
def test_phases_equal_the_full_gather_and_the_cpu(monkeypatch, shape, wshape, kw, transposed):
    torch.manual_seed(0)
    x = torch.randn(shape)
    w = torch.randn(wshape)
    b = torch.randn(wshape[1] * kw.get("groups", 1) if transposed else wshape[0])
    y1, gx1, phased, g = _run(x, w, b, kw, transposed, True, monkeypatch)
    y0, gx0, unphased, _ = _run(x, w, b, kw, transposed, False, monkeypatch)
    assert phased >= 1 and unphased == 0
    # The same products in the same order; under the interpreter tl.dot is numpy's
    # matmul, whose BLAS may block differently by shape (and CPU), so allow rounding.
    torch.testing.assert_close(y1, y0, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(gx1, gx0, rtol=1e-6, atol=1e-6)
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()]
    if transposed:
        conv = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[x.dim()]
    xr = x.double().requires_grad_()
    yr = conv(xr, w.double(), b.double(), **kw)
    (gxr,) = torch.autograd.grad(yr, xr, g.double())
    torch.testing.assert_close(y1.double(), yr, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(gx1.double(), gxr, atol=1e-4, rtol=1e-4)


def test_unit_stride_and_dilation_keep_the_full_gather():
    from torch_ext.ops.conv_igemm import phase_fits

    assert phase_fits([1, 2, 1], [1, 1, 1])
    assert not phase_fits([1, 1, 1], [1, 1, 1])
    assert not phase_fits([1, 2, 1], [1, 1, 2])


SPLIT_CASES = [
    # (input shape, weight shape, conv kwargs): 9 taps x 2 blocks of channels ...
    ((2, 20, 6, 5), (24, 20, 3, 3), dict(padding=1)),
    # ... a strided, grouped, dilated 3-d one whose input gradient takes the full gather
    ((1, 8, 5, 6, 4), (6, 4, 2, 3, 1), dict(stride=(1, 2, 1), dilation=(2, 1, 1), groups=2)),
]


@pytest.mark.parametrize("split", [2, 3, 7])
@pytest.mark.parametrize("case", range(len(SPLIT_CASES)), ids=["3x3", "3d_grouped"])
def test_split_k_forward_and_input_gradient_match_the_cpu(monkeypatch, case, split):
    """K split `split` ways (some splits over no steps at 7), the partial tiles summed by
    the last program to arrive: forward and input gradient equal the CPU's, the same bits
    on a second run (the arrival counters re-armed), and every launch took the split."""
    shape, wshape, kw = SPLIT_CASES[case]
    splits = []

    def choose(family, key, candidates, run, device):
        first = list(candidates)[0]
        splits.append(key[0])
        return (*first[:5], split) + ((False,) if len(first) > 6 else ())

    monkeypatch.setattr(conv_igemm, "tuned", choose)
    torch_ext._C._plan_clear()  # launches recorded with another split would replay
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=torch.float64)
    w = torch.randn(wshape, dtype=torch.float64)
    b = torch.randn(wshape[0], dtype=torch.float64)
    conv = {4: F.conv2d, 5: F.conv3d}[x.dim()]
    xr = x.clone().requires_grad_()
    yr = conv(xr, w, b, **kw)
    g = torch.randn(yr.shape, dtype=torch.float64)
    (gxr,) = torch.autograd.grad(yr, xr, g)
    runs = []
    for _ in range(2):
        xd = x.to(DEV).requires_grad_()
        y = conv(xd, w.to(DEV), b.to(DEV), **kw)
        (gx,) = torch.autograd.grad(y, xd, g.to(DEV))
        runs.append((y.detach().cpu(), gx.cpu()))
    assert set(splits) == {"fwd", "dgrad"}  # both ran the implicit GEMM, split
    torch.testing.assert_close(runs[0][0], yr.detach(), atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(runs[0][1], gxr, atol=1e-10, rtol=1e-10)
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])


def test_split_candidates_follow_the_drivers_rule(monkeypatch):
    """Split candidates come after every whole-K one, from the first three tile shapes
    only, with the split counts the driver gives for their tile count and K."""
    asked = []

    def fake_spec(name, *args):
        if name == "mm_split_k_candidates":
            asked.append(args)
            return [2, 4] if args[0] < 100 else []
        return None

    monkeypatch.setattr(conv_igemm, "spec", fake_spec)
    base = [(128, 128, 64, 8, 3), (64, 64, 64, 4, 4), (128, 64, 64, 4, 3), (64, 128, 64, 4, 4)]
    got = conv_igemm.split_k_candidates(base, 1568, 512, 1, 4608, torch.float32)  # not wide
    assert got[:4] == [(*c, 1) for c in base]
    # tiles: 13 x 4 = 52, 25 x 8 = 200 (no split), 13 x 8 = 104 (no split)
    assert asked == [(52, 4608), (200, 4608), (104, 4608)]
    assert got[4:] == [(128, 128, 64, 8, 3, 2), (128, 128, 64, 8, 3, 4)]


def test_weight_operand_reads_channels_last_and_1x1_weights_in_place():
    """A channels_last or 1x1 weight is the kernels' operand itself (strides passed), an
    NCHW 3x3 one is copied kernel position-major; both describe the same W[k, g, c, co]."""
    w = torch.randn(6, 4, 3, 2)  # groups 2: 3 outputs x 4 channels a group
    for fmt, in_place in ((torch.channels_last, True), (torch.contiguous_format, False)):
        wf = w.contiguous(memory_format=fmt)
        for out_first in (True, False):
            t, kp, cr, co, (sg, sk, sc, sn) = conv_igemm.weight_operand(wf, 2, out_first)
            assert (t.data_ptr() == wf.data_ptr()) == in_place and kp == 6
            assert (cr, co) == ((4, 3) if out_first else (3, 4))
            flat = torch.as_strided(t, (1,), (1,), 0)  # the operand's storage from its start
            for g, k, c, n in ((1, 5, 2, 1), (0, 3, 1, 2)):
                row = g * 3 + (n if out_first else c)
                col = c if out_first else n
                ref = w[row, col].reshape(-1)[k]
                off = g * sg + k * sk + c * sc + n * sn
                assert torch.equal(torch.as_strided(flat, (1,), (1,), off)[0], ref)
    w1 = torch.randn(8, 4, 1, 1)
    assert conv_igemm.weight_operand(w1, 1, True)[0] is w1


@pytest.mark.parametrize("fmt", ["channels_last", "nchw"])
def test_channels_last_weights_in_place_match_the_cpu(fmt):
    """Forward and input gradient, grouped and strided (the gather by phases), with the
    weight read in place (channels_last) or copied (NCHW)."""
    mf = torch.channels_last if fmt == "channels_last" else torch.contiguous_format
    torch.manual_seed(3)
    x = torch.randn(2, 8, 9, 7, dtype=torch.float64).contiguous(memory_format=mf)
    w = torch.randn(6, 4, 3, 3, dtype=torch.float64).contiguous(memory_format=mf)
    for kw in (dict(padding=1, groups=2), dict(stride=2, padding=1, groups=2)):
        xr = x.clone().requires_grad_()
        yr = F.conv2d(xr, w, **kw)
        g = torch.randn(yr.shape, dtype=torch.float64)
        (gxr,) = torch.autograd.grad(yr, xr, g)
        xd = x.to(DEV).requires_grad_()
        y = F.conv2d(xd, w.to(DEV), **kw)
        (gx,) = torch.autograd.grad(y, xd, g.to(DEV))
        torch.testing.assert_close(y.detach().cpu(), yr.detach(), atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(gx.cpu(), gxr, atol=1e-10, rtol=1e-10)


def test_wide_tiles_join_the_split_candidates_for_16_bit_products(monkeypatch):
    """For 16-bit operands and 256 or more columns, 128 x 256 tiles are timed whole and split;
    under 256 columns they are not."""
    monkeypatch.setattr(
        conv_igemm, "spec", lambda name, *a: [4] if name.startswith("mm_") else None
    )
    base = [(128, 128, 64, 8, 3)]
    got = conv_igemm.split_k_candidates(base, 1568, 512, 1, 4608, torch.bfloat16)
    assert got == [(*base[0], 1), (*conv_igemm.WIDE, 1), (*base[0], 4), (*conv_igemm.WIDE, 4)]
    narrow = conv_igemm.split_k_candidates(base, 1568, 128, 1, 4608, torch.bfloat16)
    assert conv_igemm.WIDE[:2] not in [c[:2] for c in narrow]


@pytest.mark.parametrize("fmt", ["channels_last", "nchw"])
def test_weight_gradient_follows_the_weights_memory_format(monkeypatch, fmt):
    """As torch: a channels_last weight's gradient is channels_last (the kernel's tiles
    store its channels contiguously), an NCHW one's contiguous; both the CPU's values,
    one slice or several (float32 partials summed)."""
    from torch_ext.ops import conv_igemm_bwd

    mf = torch.channels_last if fmt == "channels_last" else torch.contiguous_format
    torch.manual_seed(4)
    x = torch.randn(2, 32, 7, 8, dtype=torch.float64).contiguous(memory_format=mf)
    w = torch.randn(10, 16, 3, 2, dtype=torch.float64).contiguous(memory_format=mf)
    kw = dict(stride=(1, 2), padding=1, groups=2)
    wr = w.clone().requires_grad_()
    yr = F.conv2d(x, wr, **kw)
    g = torch.randn(yr.shape, dtype=torch.float64)
    (gwr,) = torch.autograd.grad(yr, wr, g)
    for split in (1, 3):
        calls = []

        def choose(family, key, candidates, run, device, split=split, calls=calls):
            calls.append(key[0])
            return next(c for c in candidates if c[-2] == split)

        monkeypatch.setattr(conv_igemm_bwd, "tuned", choose)
        monkeypatch.setattr(conv_igemm_bwd, "split_candidates", lambda R, work: [1, 3])
        torch_ext._C._plan_clear()
        wd = w.to(DEV).requires_grad_()
        (gw,) = torch.autograd.grad(F.conv2d(x.to(DEV), wd, **kw), wd, g.to(DEV))
        assert calls == ["wgrad"] and gw.is_contiguous(memory_format=mf)
        torch.testing.assert_close(gw.cpu(), gwr, atol=1e-10, rtol=1e-10)


def test_split_k_convolution_replays_from_its_launch_plan(monkeypatch):
    """A split-K forward (scratch partials, arrival counters) is recorded once and then
    replayed without Python, each replay the CPU's result."""

    def choose(family, key, candidates, run, device):
        return (*list(candidates)[0][:5], 3)

    monkeypatch.setattr(conv_igemm, "tuned", choose)
    torch_ext._C._plan_clear()
    torch.manual_seed(5)
    x = torch.randn(2, 20, 6, 5, dtype=torch.float64)
    w = torch.randn(24, 20, 3, 3, dtype=torch.float64)
    ref = F.conv2d(x, w, padding=1)
    xd, wd = x.to(DEV), w.to(DEV)
    before = torch_ext._C._plan_stats()["replayed"]
    for _ in range(3):
        torch.testing.assert_close(F.conv2d(xd, wd, padding=1).cpu(), ref)
    assert torch_ext._C._plan_stats()["replayed"] - before >= 2
