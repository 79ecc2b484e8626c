"""Kernel-level tests of the convolution family (convolution_overrideable and
its backward: 1-d/2-d, stride, padding, dilation, groups, transposed), called
through the registry on `device` (CPU tensors under Triton's interpreter by
default; tests/ops/conftest.py) against PyTorch's CPU convolution and autograd."""

import pytest
import torch

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

CASES = [
    # input shape, weight shape, stride, padding, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3, 2), [1, 1], [0, 0], [1, 1], 1),
    ((1, 4, 8, 7), (6, 2, 3, 3), [2, 1], [1, 2], [1, 2], 2),
    ((2, 2, 9), (3, 2, 4), [2], [1], [1], 1),
]


def _conv(x, w, b, case, transposed=False, out_pad=None):
    _, _, stride, padding, dilation, groups = case
    out_pad = out_pad or [0] * len(stride)
    return KERNELS["convolution_overrideable"](
        x, w, b, stride, padding, dilation, transposed, out_pad, groups
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("case", CASES, ids=["plain", "strided-grouped", "1d"])
def test_convolution_forward_backward(dtype, case, device):
    xs, ws, stride, padding, dilation, groups = case
    x, w = randn(xs, dtype, device), randn(ws, dtype, device)
    b = randn((ws[0],), dtype, device)
    y = _conv(x, w, b, case)
    rx, rw, rb = (to_ref(t).requires_grad_() for t in (x, w, b))
    ry = torch.ops.aten.convolution(
        rx, rw, rb, stride, padding, dilation, False, [0] * len(stride), groups
    )
    red = ws[1] * ws[2] * (ws[3] if len(ws) > 3 else 1)
    assert_close(y, ry, dtype, reduce_dim=red)
    g = randn(y.shape, dtype, device)
    gx, gw, gb = KERNELS["convolution_backward_overrideable"](
        g, x, w, stride, padding, dilation, False, [0] * len(stride), groups, [True, True, True]
    )
    ry.backward(to_ref(g))
    assert_close(gx, rx.grad, dtype, reduce_dim=red)
    assert_close(gw, rw.grad, dtype, reduce_dim=y.numel() // y.shape[1])
    assert_close(gb, rb.grad, dtype, reduce_dim=y.numel() // y.shape[1])


def test_convolution_transposed_and_output_mask(device):
    x = randn((1, 4, 5, 5), torch.float32, device)
    w = randn((4, 3, 3, 3), torch.float32, device)  # (C_in, C_out, kh, kw)
    case = (None, None, [2, 2], [1, 1], [1, 1], 1)
    y = _conv(x, w, None, case, transposed=True, out_pad=[1, 0])
    ref = torch.nn.functional.conv_transpose2d(
        to_ref(x), to_ref(w), stride=2, padding=1, output_padding=(1, 0)
    )
    assert_close(y, ref, reduce_dim=36)
    g = randn(y.shape, torch.float32, device)
    gx, gw, gb = KERNELS["convolution_backward_overrideable"](
        g, x, w, [2, 2], [1, 1], [1, 1], True, [1, 0], 1, [True, False, False]
    )
    rx = to_ref(x).requires_grad_()
    torch.nn.functional.conv_transpose2d(
        rx, to_ref(w), stride=2, padding=1, output_padding=(1, 0)
    ).backward(to_ref(g))
    assert_close(gx, rx.grad, reduce_dim=36)
    assert gw is None and gb is None


def test_convolution_noncontiguous_and_empty_batch(device):
    x = randn((2, 5, 6, 3), torch.float32, device).permute(0, 3, 1, 2)  # channels last view
    w = randn((2, 3, 2, 2), torch.float32, device)
    case = (None, None, [1, 1], [0, 0], [1, 1], 1)
    y = _conv(x, w, None, case)
    assert_close(y, torch.nn.functional.conv2d(to_ref(x), to_ref(w)), reduce_dim=12)
    e = _conv(randn((0, 3, 4, 4), torch.float32, device), w, None, case)
    assert e.shape == (0, 2, 3, 3)


# Pairwise-style coverage of the implicit-GEMM kernels: each row varies several
# parameters at once (dims, stride, padding, dilation, groups incl. depthwise,
# transposed, bias, memory format / non-contiguous input, odd sizes).
# (input shape, weight shape, stride, padding, dilation, groups, transposed, bias, layout)
PAIRWISE = [
    ((2, 3, 7), (5, 3, 3), [2], [1], [2], 1, False, True, "contig"),
    ((1, 4, 9), (4, 1, 3), [1], [2], [1], 4, False, False, "noncontig"),
    ((2, 4, 6, 5), (6, 2, 3, 1), [1, 2], [0, 1], [1, 1], 2, False, True, "channels_last"),
    ((1, 3, 5, 7), (3, 1, 3, 3), [2, 1], [1, 1], [2, 1], 3, False, True, "contig"),
    ((2, 6, 5, 4), (6, 1, 2, 2), [1, 1], [1, 0], [1, 2], 6, True, False, "channels_last"),
    ((1, 4, 4, 5), (4, 3, 3, 2), [2, 3], [1, 0], [1, 1], 1, True, True, "noncontig"),
    ((1, 2, 4, 5, 3), (4, 2, 2, 3, 1), [1, 2, 1], [1, 1, 0], [1, 1, 2], 1, False, True, "cl3d"),
    ((2, 4, 3, 4, 5), (4, 1, 2, 2, 2), [2, 1, 1], [0, 1, 1], [1, 2, 1], 2, True, False, "contig"),
    (
        (1, 2, 3, 3, 4),
        (2, 1, 3, 1, 2),
        [1, 1, 2],
        [1, 0, 1],
        [1, 1, 1],
        2,
        False,
        False,
        "noncontig",
    ),
    # depthwise (direct kernels): channel multiplier 2, channels_last, 3-d, non-contiguous
    ((2, 3, 6, 5), (6, 1, 3, 3), [2, 1], [1, 2], [1, 2], 3, False, True, "channels_last"),
    ((1, 4, 3, 4, 5), (4, 1, 2, 3, 3), [1, 2, 1], [1, 1, 0], [2, 1, 1], 4, False, False, "cl3d"),
    ((2, 5, 7), (10, 1, 5), [3], [2], [1], 5, False, True, "noncontig"),
]


def _layout(t, layout):
    if layout == "channels_last":
        return t.contiguous(memory_format=torch.channels_last)
    if layout == "cl3d":
        return t.contiguous(memory_format=torch.channels_last_3d)
    if layout == "noncontig":
        return torch.cat([t, t], -1)[..., ::2]  # strided last dim, offset-free view
    return t


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("row", PAIRWISE, ids=[f"p{i}" for i in range(len(PAIRWISE))])
def test_convolution_pairwise(row, dtype, device):
    xs, ws, stride, padding, dilation, groups, transposed, has_bias, layout = row
    x = _layout(randn(xs, dtype, device), layout)
    w = randn(ws, dtype, device)
    cout = ws[1] * groups if transposed else ws[0]
    b = randn((cout,), dtype, device) if has_bias else None
    nd = len(stride)
    out_pad = [min(s, d) - 1 for s, d in zip(stride, dilation)] if transposed else [0] * nd
    args = (stride, padding, dilation, transposed, out_pad, groups)
    y = KERNELS["convolution_overrideable"](x, w, b, *args)
    rx, rw = to_ref(x).requires_grad_(), to_ref(w).requires_grad_()
    rb = to_ref(b).requires_grad_() if has_bias else None
    ry = torch.ops.aten.convolution(rx, rw, rb, *args)
    red = (ws[0] if transposed else ws[1]) * (torch.Size(ws[2:]).numel())
    assert_close(y, ry, dtype, reduce_dim=red)
    if layout in ("channels_last", "cl3d") and not transposed:
        assert y.stride() == ry.contiguous(memory_format=_fmt(layout)).stride()
    g = randn(y.shape, dtype, device)
    gx, gw, gb = KERNELS["convolution_backward_overrideable"](
        g, x, w, *args, [True, True, has_bias]
    )
    ry.backward(to_ref(g))
    assert_close(gx, rx.grad, dtype, reduce_dim=red * 2)
    assert_close(gw, rw.grad, dtype, reduce_dim=y.numel() // y.shape[1])
    if has_bias:
        assert_close(gb, rb.grad, dtype, reduce_dim=y.numel() // y.shape[1])


def _fmt(layout):
    return torch.channels_last if layout == "channels_last" else torch.channels_last_3d


@pytest.mark.parametrize("depthwise", [False, True], ids=["gemm", "depthwise"])
def test_convolution_weight_grad_split_is_deterministic(depthwise, device):
    # a long (n, o) reduction: the weight gradient sums ordered slices
    c = 4 if depthwise else 2
    x = randn((1, c, 8200), torch.float32, device)
    w = randn((c, 1 if depthwise else c, 3), torch.float32, device)
    g = randn((1, c, 8198), torch.float32, device)
    args = ([1], [0], [1], False, [0], c if depthwise else 1, [False, True, False])
    conv_bwd = KERNELS["convolution_backward_overrideable"]
    gw1 = conv_bwd(g, x, w, *args)[1]
    gw2 = conv_bwd(g, x, w, *args)[1]
    assert torch.equal(gw1.cpu(), gw2.cpu())
    rx, rw = to_ref(x), to_ref(w).requires_grad_()
    ref = torch.nn.functional.conv1d(rx, rw, groups=args[5])
    ref.backward(to_ref(g))
    assert_close(gw1, rw.grad, reduce_dim=8198)


@pytest.mark.parametrize("wide", [False, True], ids=["int32", "int64"])
def test_depthwise_index_widths_agree(wide, device, monkeypatch):
    # the direct kernels index in int32 below 2**31 elements (fast division of the
    # weight gradient's rows) and in int64 past it: both widths against CPU
    from torch_ext.ops import conv_depthwise

    monkeypatch.setattr(conv_depthwise, "needs_int64", lambda *t: wide)
    x = randn((2, 8, 9, 7), torch.float32, device).contiguous(memory_format=torch.channels_last)
    w = randn((8, 1, 3, 3), torch.float32, device)
    args = ([2, 1], [1, 1], [1, 1], False, [0, 0], 8)
    y = KERNELS["convolution_overrideable"](x, w, None, *args)
    rx, rw = to_ref(x).requires_grad_(), to_ref(w).requires_grad_()
    ry = torch.ops.aten.convolution(rx, rw, None, *args)
    assert_close(y, ry, reduce_dim=9)
    g = randn(y.shape, torch.float32, device)
    gx, gw, _ = KERNELS["convolution_backward_overrideable"](g, x, w, *args, [True, True, False])
    ry.backward(to_ref(g))
    assert_close(gx, rx.grad, reduce_dim=18)
    assert_close(gw, rw.grad, reduce_dim=y.numel() // y.shape[1])
