"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the normalization
family (layer, group, rms norm)."""

import pytest

import torch
import torch.nn.functional as F

from torch_ext.ops import group_norm as gn
from torch_ext.ops import normalization as norm

from helpers import FLOAT_DTYPES, force_spec, randn, to_ref
from helpers import assert_kernel_close as assert_close


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(dtype, affine, device):
    x = randn((6, 5, 72), dtype, device)
    w = randn((72,), dtype, device) if affine else None
    b = randn((72,), dtype, device) if affine else None
    y, mean, rstd = norm.native_layer_norm(x, [72], w, b, 1e-5)
    ry, rmean, rrstd = torch.native_layer_norm(to_ref(x), [72], to_ref(w), to_ref(b), 1e-5)
    assert_close(y, ry.to(dtype), dtype, reduce_dim=2)
    assert_close(mean, rmean.float(), torch.float32, reduce_dim=2)
    assert_close(rstd, rrstd.float(), torch.float32, rtol=1e-4)
    g = randn((6, 5, 72), dtype, device)
    mask = [True, affine, affine]
    got = norm.native_layer_norm_backward(
        g, x, [72], rmean.to(mean.dtype).to(device), rrstd.to(rstd.dtype).to(device), w, b, mask
    )
    ref = torch.ops.aten.native_layer_norm_backward(
        to_ref(g), to_ref(x), [72], rmean, rrstd, to_ref(w), to_ref(b), mask
    )
    for a, r, n in zip(got, ref, (72, 30, 30)):
        if r is None:
            assert a is None
        else:
            assert_close(a, r.to(dtype), dtype, reduce_dim=n)


def test_layer_norm_forward_takes_the_drivers_warps(device, monkeypatch):
    """A driver's warps for the one-pass layer norm forward (spec layer_norm_fwd_warps,
    the GPU's 4 for 8Ki-wide rows) reach its launch and give the same result; RMS norm
    keeps the row rule."""
    seen = []
    real = norm.launch

    def spy(kernel, grid, *args, **kw):
        seen.append(kw.get("num_warps"))
        return real(kernel, grid, *args, **kw)

    force_spec(monkeypatch, norm, layer_norm_fwd_warps=2)
    monkeypatch.setattr(norm, "launch", spy)
    x = randn((5, 96), torch.float32, device)
    w, b = randn((96,), torch.float32, device), randn((96,), torch.float32, device)
    y, _, _ = norm.native_layer_norm(x, [96], w, b, 1e-5)
    ry, _, _ = torch.native_layer_norm(to_ref(x), [96], to_ref(w), to_ref(b), 1e-5)
    assert_close(y, ry.float(), torch.float32, reduce_dim=2)
    assert seen == [2]
    norm.rms_norm_fwd(x, [96], w, 1e-6)
    assert seen[1] != 2


GN_CASES = [(3, 6, 35, 3, True), (2, 4, 600, 2, False), (2, 8, 1, 8, True), (1, 6, 700, 1, True)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("N,C,HW,G,affine", GN_CASES)
def test_group_norm(N, C, HW, G, affine, dtype, device):
    """Forward and backward in 2 launches each (bf16 input with fp32 params as
    autocast gives), rows long enough to split on the host."""
    from torch_ext.ops import _launch

    x = randn((N, C, HW), dtype, device) * 2 + 3
    w = randn((C,), torch.float32, device) if affine else None
    b = randn((C,), torch.float32, device) if affine else None
    before = _launch.launches()
    got = gn.native_group_norm(x, w, b, N, C, HW, G, 1e-5)
    assert _launch.launches() - before <= 2
    ref = torch.native_group_norm(to_ref(x), to_ref(w), to_ref(b), N, C, HW, G, 1e-5)
    red = C // G * HW
    assert_close(got[0], ref[0], dtype, reduce_dim=4)
    assert_close(got[1], ref[1], torch.float32, reduce_dim=red)
    assert_close(got[2], ref[2], torch.float32, reduce_dim=red)
    g = randn((N, C, HW), dtype, device)
    mask = [True, affine, affine]
    before = _launch.launches()
    gb = gn.native_group_norm_backward(g, x, got[1], got[2], w, N, C, HW, G, mask)
    assert _launch.launches() - before <= 2
    rb = torch.ops.aten.native_group_norm_backward(
        to_ref(g), to_ref(x), ref[1], ref[2], to_ref(w), N, C, HW, G, mask
    )
    # The weight gradient sums dy * (x - mean) * rstd, computed as rstd * (sum(dy x) - mean
    # sum(dy)) like PyTorch's CUDA kernel: one rounding of x - mean grows by rstd, which is
    # 1/sqrt(eps) for one-element groups (G == C, HW == 1), where the exact value is 0.
    amplify = max(1.0, float(ref[2].max()) / 30)
    for i, (a, r) in enumerate(zip(gb, rb)):
        if r is None:
            assert a is None
        else:
            n = red * N * (amplify if i == 1 else 1.0)
            assert_close(a, r, dtype if a.shape == x.shape else torch.float32, reduce_dim=n)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rms_norm(dtype, device):
    x = randn((9, 64), dtype, device)
    w = randn((64,), dtype, device)
    xr = to_ref(x).requires_grad_()
    wr = to_ref(w).requires_grad_()
    ref = F.rms_norm(xr, [64], wr, 1e-6)
    y, rstd = norm.rms_norm_fwd(x, [64], w, 1e-6)
    assert_close(y, ref.detach().to(dtype), dtype, reduce_dim=2)
    g = randn((9, 64), dtype, device)
    dx, dw = torch.autograd.grad(ref, (xr, wr), to_ref(g))
    gx, gw = norm.rms_norm_bwd(g, x, [64], rstd, w, [True, True])
    assert_close(gx, dx.to(dtype), dtype, reduce_dim=4)
    assert_close(gw, dw.to(dtype), dtype, reduce_dim=9)


@pytest.mark.parametrize("mask", [[True, True, True], [True, False, False], [False, True, True]])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_norm_backward_programs_over_row_blocks(mask, dtype, device, monkeypatch):
    """The GPU's layout of the layer/RMS norm backward, forced at a small size: blocks of
    4 rows, 3 programs each taking every third block (8 blocks: uneven), per-program
    weight/bias partials added up by a second launch."""
    from torch_ext.ops import _rows

    force_spec(monkeypatch, norm, norm_backward_programs=3)
    force_spec(monkeypatch, _rows, reduction_block=512)
    x = randn((6, 5, 72), dtype, device)
    w, b = randn((72,), dtype, device), randn((72,), dtype, device)
    g = randn((6, 5, 72), dtype, device)
    _, rmean, rrstd = torch.native_layer_norm(to_ref(x), [72], to_ref(w), to_ref(b), 1e-5)
    got = norm.native_layer_norm_backward(
        g, x, [72], rmean.float().to(device), rrstd.float().to(device), w, b, mask
    )
    ref = torch.ops.aten.native_layer_norm_backward(
        to_ref(g), to_ref(x), [72], rmean, rrstd, to_ref(w), to_ref(b), mask
    )
    for a, r, n in zip(got, ref, (72, 30, 30)):
        assert (a is None) == (r is None)
        if r is not None:
            assert_close(a, r.to(dtype), dtype, reduce_dim=n)
    xr, wr = to_ref(x).requires_grad_(), to_ref(w).requires_grad_()
    out = F.rms_norm(xr, [72], wr, 1e-6)
    _, rstd = norm.rms_norm_fwd(x, [72], w, 1e-6)
    gx, gw = norm.rms_norm_bwd(g, x, [72], rstd, w, mask[:2])
    dx, dw = torch.autograd.grad(out, (xr, wr), to_ref(g))
    if mask[0]:
        assert_close(gx, dx.to(dtype), dtype, reduce_dim=4)
    if mask[1]:
        assert_close(gw, dw.to(dtype), dtype, reduce_dim=30)


def _kernels_run(monkeypatch, module):
    """The names of the kernels `module` launches from now on."""
    names = []
    launch = module.launch

    def spy(kernel, grid, *args, **kwargs):
        names.append(kernel.fn.__name__)
        return launch(kernel, grid, *args, **kwargs)

    monkeypatch.setattr(module, "launch", spy)
    return names


CAP = 64  # the one-tile cap forced below (the backward's: 32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("D", [32, 33, 64, 65, 200])
@pytest.mark.parametrize("affine", [True, False])
def test_norms_one_tile_and_looped(D, affine, dtype, device, monkeypatch):
    """Widths just under and over a small forced cap: one-pass (x read once) and looped
    kernels, forward and backward, layer and RMS norm. The looped forward merges tiles
    of 32 (200 = 6 tiles and a partial one) around a mean of 50: its variance must not
    cancel."""
    from torch_ext.ops import _rows

    force_spec(monkeypatch, _rows, row_tile_cap=CAP)
    force_spec(monkeypatch, norm, reduction_block=32)
    names = _kernels_run(monkeypatch, norm)
    x = randn((7, D), dtype, device) + 50
    w = randn((D,), dtype, device) if affine else None
    b = randn((D,), dtype, device) if affine else None
    g = randn((7, D), dtype, device)
    xr, wr, br = to_ref(x), to_ref(w), to_ref(b)
    y, mean, rstd = norm.native_layer_norm(x, [D], w, b, 1e-5)
    ry, rmean, rrstd = torch.native_layer_norm(xr, [D], wr, br, 1e-5)
    assert_close(y, ry.to(dtype), dtype, reduce_dim=2)
    assert_close(mean, rmean.float(), torch.float32, reduce_dim=2)
    assert_close(rstd, rrstd.float(), torch.float32, rtol=1e-4)
    mask = [True, affine, affine]
    got = norm.native_layer_norm_backward(g, x, [D], mean, rstd, w, b, mask)
    ref = torch.ops.aten.native_layer_norm_backward(to_ref(g), xr, [D], rmean, rrstd, wr, br, mask)
    for a, r, n in zip(got, ref, (D, 7, 7)):
        assert (a is None) == (r is None)
        if r is not None:
            assert_close(a, r.to(dtype), dtype, reduce_dim=n)
    y, rstd = norm.rms_norm_fwd(x, [D], w, 1e-6)
    xg = xr.clone().requires_grad_()
    wg = wr.clone().requires_grad_() if affine else None
    ref = F.rms_norm(xg, [D], wg, 1e-6)
    assert_close(y, ref.detach().to(dtype), dtype, reduce_dim=2)
    gx, gw = norm.rms_norm_bwd(g, x, [D], rstd, w, [True, affine])
    grads = torch.autograd.grad(ref, [t for t in (xg, wg) if t is not None], to_ref(g))
    assert_close(gx, grads[0].to(dtype), dtype, reduce_dim=D)
    if affine:
        assert_close(gw, grads[1].to(dtype), dtype, reduce_dim=7)
    fwd = "_norm_fwd_tile_kernel" if D <= (CAP // 2 if affine else CAP) else "_norm_fwd_kernel"
    bwd = ["_norm_bwd_row_kernel"] if D <= CAP // 2 else ["_norm_bwd_dx_kernel"]
    bwd_w = ["_norm_bwd_dw_kernel"] if affine else []
    assert names == [fwd] + bwd + bwd_w + [fwd] + bwd + bwd_w
