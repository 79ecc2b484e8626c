"""ops/conv_igemm_bwd.py: the weight gradient's pixel arithmetic by fast division
(_common.fastdiv / fdiv) gives the same bits as by division, fdiv and inside are exact,
and the tall tiles are timed and correct."""

import random

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from torch_ext.ops import conv_igemm_bwd
from torch_ext.ops._common import fastdiv, fdiv, inside

DEV = "privateuseone"


@triton.jit
def _divide(x, y, n, m, sh, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + i, fdiv(tl.load(x + i, mask=i < n), m, sh), mask=i < n)


@pytest.mark.parametrize("d", [1, 2, 3, 7, 49, 196, 784, 3136, 12544, 100352, 2**30, 2**31 - 1])
def test_fdiv_is_exact(d):
    rng = random.Random(d)
    vals = [0, 1, d - 1, d, d + 1, 2 * d - 1, 2**31 - 1] + [
        rng.randrange(2**31) for _ in range(200)
    ]
    x = torch.tensor([min(v, 2**31 - 1) for v in vals], dtype=torch.int32)
    y = torch.empty_like(x)
    xd, yd = x.to(DEV), y.to(DEV)
    _divide[(triton.cdiv(x.numel(), 256),)](xd, yd, x.numel(), *fastdiv(d), B=256)
    assert torch.equal(yd.cpu(), torch.div(x, d, rounding_mode="floor"))


@pytest.mark.parametrize(
    "shape,kernel,args",
    [
        ((2, 6, 9, 7), (5, 6, 3, 3), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
        ((2, 4, 5, 6, 7), (4, 4, 3, 2, 3), dict(stride=1, padding=1, dilation=1)),
        ((3, 8, 11), (6, 4, 3), dict(stride=3, padding=2, dilation=2, groups=2)),
    ],
    ids=["2d", "3d", "1d_grouped"],
)
def test_fast_division_gives_the_same_bits(monkeypatch, shape, kernel, args):
    """Same tiles, same slices: the two ways of finding each row's pixel run the same
    products in the same order (and equal the CPU's gradient)."""
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(shape)]
    nd = len(shape) - 2
    x = torch.randn(*shape).to(torch.bfloat16)
    dy = torch.randn(conv(x.float(), torch.zeros(kernel), **args).shape).to(torch.bfloat16)
    norm = {k: [v] * nd if isinstance(v, int) else list(v) for k, v in args.items()}
    geom = (norm["stride"], norm["padding"], norm["dilation"], args.get("groups", 1))
    got = []
    for fast in (False, True):
        cfg = (16, 16, 16, 4, 2, 2, fast)
        monkeypatch.setattr(conv_igemm_bwd, "tuned", lambda f, k, c, r, d, cfg=cfg: cfg)
        got.append(conv_igemm_bwd.conv_weight_grad(dy.to(DEV), x.to(DEV), kernel, *geom).cpu())
    assert torch.equal(got[0], got[1])
    wr = torch.zeros(kernel, dtype=torch.float64, requires_grad=True)
    conv(x.double(), wr, **args).backward(dy.double())
    err = (got[1].double() - wr.grad).abs().max() / wr.grad.abs().max()
    assert err < 2e-2, err


@triton.jit
def _inside(x, y, n, size, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + i, inside(tl.load(x + i, mask=i < n), size).to(tl.int32), mask=i < n)


@pytest.mark.parametrize("size", [1, 7, 2**31 - 1])
def test_inside_is_one_unsigned_bound(size):
    """_common.inside(i, size) == (0 <= i < size) for negative, in-range and past-the-end
    indices (size 1 is a constant in compiled kernels)."""
    x = torch.tensor([-(2**31), -7, -1, 0, 1, 6, 7, 8, 2**31 - 2, 2**31 - 1], dtype=torch.int32)
    y = torch.empty_like(x)
    xd, yd = x.to(DEV), y.to(DEV)
    _inside[(1,)](xd, yd, x.numel(), size, B=16)
    assert torch.equal(yd.cpu(), ((x >= 0) & (x < size)).to(torch.int32))


def test_tall_tiles_are_timed_for_wide_16_bit_gradients(monkeypatch):
    """256 x 128 tiles join the weight gradient's candidates for 16-bit dy with 256 or more
    channels, and a 256-row tile (partly masked: 260 channels) gives the CPU's gradient."""
    seen = []

    def first(family, key, candidates, run, device):
        seen.append([c[:2] for c in candidates])
        return candidates[0]

    monkeypatch.setattr(conv_igemm_bwd, "tuned", first)
    x = torch.randn(2, 8, 5, 5).to(torch.bfloat16)
    for co, dtype, tall in ((256, torch.bfloat16, True), (128, torch.bfloat16, False),
                            (256, torch.float32, False)):  # fmt: skip
        dy = torch.randn(2, co, 5, 5).to(dtype)
        conv_igemm_bwd.conv_weight_grad(dy.to(DEV), x.to(dtype).to(DEV), (co, 8, 3, 3), [1, 1], [1, 1], [1, 1], 1)  # fmt: skip
        assert (conv_igemm_bwd.TALL[:2] in seen[-1]) == tall
    x = torch.randn(2, 8, 6, 5, dtype=torch.float64)
    dy = torch.randn(2, 260, 6, 5, dtype=torch.float64)
    monkeypatch.setattr(conv_igemm_bwd, "tuned", lambda f, k, c, r, d: (256, 16, 16, 4, 2, 2, True))
    got = conv_igemm_bwd.conv_weight_grad(dy.to(DEV), x.to(DEV), (260, 8, 3, 3), [1, 1], [1, 1], [1, 1], 1)  # fmt: skip
    ref = torch.nn.grad.conv2d_weight(x, (260, 8, 3, 3), dy, padding=1)
    assert got.is_contiguous()
    torch.testing.assert_close(got.cpu(), ref, atol=1e-10, rtol=1e-10)
