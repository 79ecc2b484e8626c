"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the softmax
family."""

import pytest

import torch
import triton
import triton.language as tl

from torch_ext.ops import _math, softmax

from helpers import FLOAT_DTYPES, force_spec, randn, to_ref
from helpers import assert_kernel_close as assert_close


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "shape,dim", [((7, 300), 1), ((4, 33, 5), 1), ((9, 6), 0), ((11,), 0), ((0, 5), 1)]
)
def test_softmax(shape, dim, dtype, device):
    x = randn(shape, dtype, device) * 3
    xr = to_ref(x)
    for log in (False, True):
        out = torch.empty_like(x)
        (softmax.log_softmax_out if log else softmax.softmax_out)(x, dim, False, out)
        ref = (torch.log_softmax if log else torch.softmax)(xr, dim)
        assert_close(out, ref.to(dtype), dtype)
    g = randn(shape, dtype, device)
    y = torch.softmax(xr, dim)
    gi = torch.empty_like(x)
    softmax.softmax_backward_out(g, y.to(dtype).to(device), dim, dtype, gi)
    assert_close(
        gi, torch._softmax_backward_data(to_ref(g), y, dim, torch.float64).to(dtype), dtype
    )
    ly = torch.log_softmax(xr, dim)
    softmax.log_softmax_backward_out(g, ly.to(dtype).to(device), dim, dtype, gi)
    assert_close(
        gi,
        torch._log_softmax_backward_data(to_ref(g), ly, dim, torch.float64).to(dtype),
        dtype,
        reduce_dim=4,
    )


def test_softmax_half_to_float_noncontiguous(device):
    x = randn((40, 12), torch.float16, device).t()
    out = torch.empty(x.shape, dtype=torch.float32, device=device)
    softmax.softmax_out(x, 1, True, out)
    assert_close(out, torch.softmax(to_ref(x), 1).float())


def _kernels_run(monkeypatch, module):
    """The names of the kernels `module` launches from now on."""
    names = []
    launch = module.launch

    def spy(kernel, grid, *args, **kwargs):
        names.append(kernel.fn.__name__)
        return launch(kernel, grid, *args, **kwargs)

    monkeypatch.setattr(module, "launch", spy)
    return names


CAP = 64  # the one-tile cap forced below: rows up to 64 (dim -1) or 4 (other dims)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "shape,dim,tiled",
    [
        ((5, 64), 1, True),  # one tile: each row read once
        ((5, 65), 1, False),  # one element over the cap: the two-pass loop
        ((6, 32), 1, True),  # the backward's cap (two arrays: 32)
        ((3, 4, 37), 1, True),  # non-innermost dim, 16 lanes a program
        ((3, 5, 37), 1, False),
        ((2, 3, 40, 33), 3, True),  # several short rows a program
    ],
)
def test_softmax_one_tile_and_looped(shape, dim, tiled, dtype, device, monkeypatch):
    """Row lengths just under and over a small forced cap take the one-pass and the
    looped kernels, forward and backward, with the same results."""
    from torch_ext.ops import _rows

    force_spec(monkeypatch, _rows, row_tile_cap=CAP)
    names = _kernels_run(monkeypatch, softmax)
    x = randn(shape, dtype, device) * 4
    xr = to_ref(x)
    out = torch.empty_like(x)
    for log in (False, True):
        (softmax.log_softmax_out if log else softmax.softmax_out)(x, dim, False, out)
        ref = (torch.log_softmax if log else torch.softmax)(xr, dim)
        assert_close(out, ref.to(dtype), dtype)
    g = randn(shape, dtype, device)
    y = torch.softmax(xr, dim)
    softmax.softmax_backward_out(g, y.to(dtype).to(device), dim, dtype, out)
    ref = torch._softmax_backward_data(to_ref(g), y, dim, torch.float64)
    assert_close(out, ref.to(dtype), dtype, reduce_dim=4)
    ly = torch.log_softmax(xr, dim)
    softmax.log_softmax_backward_out(g, ly.to(dtype).to(device), dim, dtype, out)
    ref = torch._log_softmax_backward_data(to_ref(g), ly, dim, torch.float64)
    assert_close(out, ref.to(dtype), dtype, reduce_dim=shape[dim])
    # The backward holds the gradient and the output: half the cap.
    bwd_tiled = tiled and shape[dim] <= (CAP if dim == len(shape) - 1 else CAP // 16) // 2
    expect = ["_softmax_tile_kernel" if tiled else "_softmax_kernel"] * 2 + [
        "_softmax_bwd_tile_kernel" if bwd_tiled else "_softmax_bwd_kernel"
    ] * 2
    assert names == expect


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("width", [64, 65])
def test_softmax_minus_inf_rows(width, dtype, device, monkeypatch):
    """-inf entries get probability 0; a row of -inf alone is NaN as PyTorch's, on both
    paths."""
    from torch_ext.ops import _rows

    force_spec(monkeypatch, _rows, row_tile_cap=CAP)
    x = randn((4, width), dtype, "cpu")
    x[0] = -float("inf")
    x[1, ::3] = -float("inf")
    x[2, 0] = float("inf")
    x[3, -1] = -float("inf")
    x = x.to(device)
    out = torch.empty_like(x)
    for log in (False, True):
        (softmax.log_softmax_out if log else softmax.softmax_out)(x, 1, False, out)
        ref = (torch.log_softmax if log else torch.softmax)(to_ref(x), 1)
        assert_close(out, ref.to(dtype), dtype)


def test_softmax_forward_takes_the_drivers_warps(device, monkeypatch):
    """A driver's warps for the one-pass softmax forward over contiguous rows (spec
    softmax_fwd_warps, the GPU's 16 for 8Ki-wide rows) reach its launch, log_softmax's
    too, and give the same result; the backward and strided rows keep the row rule."""
    from helpers import spy_launches

    force_spec(monkeypatch, softmax, softmax_fwd_warps=2)
    calls = spy_launches(monkeypatch, softmax)
    x = randn((5, 96), torch.float32, device)
    out = torch.empty_like(x)
    for log in (False, True):
        (softmax.log_softmax_out if log else softmax.softmax_out)(x, 1, False, out)
        ref = (torch.log_softmax if log else torch.softmax)(to_ref(x), 1)
        assert_close(out, ref.float(), torch.float32, reduce_dim=96)
    assert [kw["num_warps"] for _, kw in calls] == [2, 2]
    softmax.softmax_out(x, 0, False, out)  # rows 96 apart: the row rule
    softmax.softmax_backward_out(out, out, 1, torch.float32, x)
    assert all(kw["num_warps"] != 2 for _, kw in calls[2:]), calls[2:]


@triton.jit
def _exp_diff_kernel(src, a, b, out, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out + i, _math.exp_diff(tl.load(a + i), tl.load(b + i), src))


def test_exp_diff_folds_for_16_bit_sources_only(device):
    """_math.exp_diff(a, b, src): e**(a - b) to float32 precision either way; over a
    16-bit source as a * log2(e) - b * log2(e) (one fused multiply-add on the GPU), over
    float32 as exp2((a - b) * log2(e)) bit for bit (float32 results stay within an ulp
    or two of PyTorch's)."""
    import numpy as np

    n = 64
    a = (torch.rand(n, dtype=torch.float32) * 40 - 20).to(device)
    b = (a.cpu() + torch.rand(n) * 10).to(device)
    ref = torch.exp(a.cpu().double() - b.cpu().double())
    got = {}
    for dt in (torch.bfloat16, torch.float32):
        out = torch.empty(n, device=device)
        _exp_diff_kernel[(1,)](torch.empty(1, dtype=dt, device=device), a, b, out, N=n)
        got[dt] = out.cpu()
        torch.testing.assert_close(got[dt].double(), ref, rtol=2e-5, atol=0)
    log2e = np.float32(1.4426950408889634)
    an, bn = a.cpu().numpy(), b.cpu().numpy()
    folded = np.exp2(an * log2e - bn * log2e)
    plain = np.exp2((an - bn) * log2e)
    assert not np.array_equal(folded, plain)  # the inputs tell the two forms apart
    from triton.runtime.interpreter import InterpretedFunction

    if isinstance(_exp_diff_kernel, InterpretedFunction):  # numpy's arithmetic, no FMA
        assert np.array_equal(got[torch.float32].numpy(), plain)
        assert np.array_equal(got[torch.bfloat16].numpy(), folded)
