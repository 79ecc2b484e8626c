"""ops/conv_igemm_tma.py: the stride-1 implicit GEMM through tensor descriptors, forced
as the tuner's pick on a driver with TMA (on CPU tensors under Triton's interpreter by
default), against the CPU in float64: forward and input gradient, both weight layouts,
padding past the map, boxes larger than the map, a bias; and where it is not timed."""

import pytest
import torch
import torch.nn.functional as F

from helpers import force_spec, randn, spy_launches, to_ref
from helpers import assert_kernel_close as assert_close


def _pick_tma(monkeypatch, tile=0, seen=None):
    """The tuner picks CANDIDATES[tile] (the TMA kernel) where the TMA kernel is timed."""
    from torch_ext.ops import conv_igemm, conv_igemm_tma

    force_spec(monkeypatch, conv_igemm_tma, mm_tma=True)

    def choose(family, key, candidates, run, dev):
        if seen is not None:
            seen.append(list(candidates))
        tma = [c for c in candidates if c[-1] == conv_igemm_tma.TMA]
        return conv_igemm_tma.CANDIDATES[tile] if tma else candidates[0]

    monkeypatch.setattr(conv_igemm, "tuned", choose)
    return conv_igemm, spy_launches(monkeypatch, conv_igemm_tma)


def _cl(t):
    return t.contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize(
    "tile,shape,wshape,padding,x_cl,w_cl",
    [
        (0, (3, 16, 7, 9), (24, 16, 3, 3), (1, 1), True, True),  # 7x9 in 8x16 boxes
        (1, (2, 8, 5, 6), (16, 8, 3, 5), (2, 1), False, False),  # NCHW copied, padding past
        (2, (2, 24, 4, 4), (8, 24, 1, 1), (0, 0), True, False),  # one tap; 2 images a box
        (3, (1, 16, 6, 5), (8, 16, 5, 3), (0, 1), False, True),  # columns past CO
    ],
    ids=["cl_bias", "nchw_pad2", "1x1", "wide_tile"],
)
def test_tma_forward_matches_the_cpu(tile, shape, wshape, padding, x_cl, w_cl, device, monkeypatch):
    conv_igemm, launched = _pick_tma(monkeypatch, tile)
    dtype = torch.bfloat16
    x = randn(shape, dtype, device)
    w = randn(wshape, dtype, device) * 0.25
    x, w = (_cl(x) if x_cl else x), (_cl(w) if w_cl else w)
    bias = randn((wshape[0],), dtype, device) if tile == 0 else None
    out_sp = [shape[i + 2] + 2 * padding[i] - wshape[i + 2] + 1 for i in range(2)]
    y = conv_igemm.conv_forward(x, w, bias, [1, 1], list(padding), [1, 1], 1, out_sp)
    ref = F.conv2d(to_ref(x), to_ref(w), to_ref(bias), 1, padding)
    assert_close(y, ref, dtype, reduce_dim=wshape[1] * wshape[2] * wshape[3])
    assert [k.fn.__name__ for k, _ in launched] == ["_igemm_tma_kernel"]
    # the weight read with its channels contiguous: channels_last, or any 1x1
    assert launched[0][1]["W_T"] == (w_cl or wshape[2] * wshape[3] == 1)
    assert launched[0][1]["FLIP"] is False
    assert y.is_contiguous(memory_format=torch.channels_last) == (x_cl or w_cl)


@pytest.mark.parametrize("w_cl", [True, False])
def test_tma_input_gradient_matches_the_cpu(w_cl, device, monkeypatch):
    """The adjoint gather (a stride-1 convolution's input gradient): taps flipped."""
    conv_igemm, launched = _pick_tma(monkeypatch, 0)
    dtype = torch.float16
    w = randn((16, 8, 3, 3), dtype, device) * 0.25
    w = _cl(w) if w_cl else w
    dy = _cl(randn((2, 16, 6, 7), dtype, device))
    dx = conv_igemm.conv_scatter(dy, w, None, [1, 1], [1, 1], [1, 1], 1, [6, 7])
    xr = torch.zeros(2, 8, 6, 7, dtype=torch.float64, requires_grad=True)
    yr = F.conv2d(xr, to_ref(w), None, 1, 1)
    (ref,) = torch.autograd.grad(yr, xr, to_ref(dy))
    assert_close(dx, ref, dtype, reduce_dim=16 * 9)
    assert [(k.fn.__name__, kw["FLIP"]) for k, kw in launched] == [("_igemm_tma_kernel", True)]


@pytest.mark.parametrize(
    "case",
    ["stride2", "groups2", "odd_channels", "float32", "no_tma"],
)
def test_tma_timed_only_where_descriptors_take_it(case, device, monkeypatch):
    """No TMA candidate for a strided or grouped convolution, channels that are not a
    16-byte multiple, float32, or a driver without TMA; their results stay right."""
    seen = []
    conv_igemm, launched = _pick_tma(monkeypatch, 0, seen)
    if case == "no_tma":
        from torch_ext.ops import conv_igemm_tma

        force_spec(monkeypatch, conv_igemm_tma, mm_tma=False)
    dtype = torch.float32 if case == "float32" else torch.bfloat16
    c = 12 if case == "odd_channels" else 16
    groups = 2 if case == "groups2" else 1
    stride = 2 if case == "stride2" else 1
    x = _cl(randn((2, c, 5, 5), dtype, device))
    w = randn((16, c // groups, 3, 3), dtype, device) * 0.25
    out = (5 + 2 - 3) // stride + 1
    y = conv_igemm.conv_forward(x, w, None, [stride] * 2, [1, 1], [1, 1], groups, [out, out])
    ref = F.conv2d(to_ref(x), to_ref(w), None, stride, 1, 1, groups)
    assert_close(y, ref, dtype, reduce_dim=c * 9)
    assert launched == [] and seen
    assert all(cand[-1] != "tma" for cands in seen for cand in cands)


def test_tma_candidates_in_the_tuned_list(device, monkeypatch):
    """A fitting convolution times the TMA candidates beside the gathering kernel's, the
    wide column tile only where there are columns for it."""
    from torch_ext.ops import conv_igemm_tma

    seen = []
    conv_igemm, _ = _pick_tma(monkeypatch, 0, seen)
    x = _cl(randn((1, 8, 4, 4), torch.bfloat16, device))
    w = randn((8, 8, 3, 3), torch.bfloat16, device)
    conv_igemm.conv_forward(x, w, None, [1, 1], [1, 1], [1, 1], 1, [4, 4])
    tma = [c for c in seen[0] if c[-1] == conv_igemm_tma.TMA]
    assert tma == [c for c in conv_igemm_tma.CANDIDATES if c[1] <= 64]
    assert len(seen[0]) > len(tma)
    assert conv_igemm_tma.box(7, 7, 128) == (2, 8, 8)
    assert conv_igemm_tma.box(14, 14, 128) == (1, 8, 16)
    assert conv_igemm_tma.box(56, 56, 64) == (1, 1, 64)
