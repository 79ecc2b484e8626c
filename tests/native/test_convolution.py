"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
convolution family (conv forward/backward, modules, a small CNN training
like CPU)."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, grads, rand, train_matches_cpu


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


CASES = {
    "2d_pad": (F.conv2d, (2, 4, 9, 8), (6, 4, 3, 3), dict(padding=1)),
    "2d_stride_dil_groups": (
        F.conv2d,
        (2, 4, 9, 8),
        (6, 2, 3, 2),
        dict(stride=2, padding=(1, 0), dilation=(2, 1), groups=2),
    ),
    "2d_depthwise": (F.conv2d, (1, 3, 7, 7), (6, 1, 3, 3), dict(groups=3, padding=1)),
    "1d": (F.conv1d, (3, 2, 11), (5, 2, 4), dict(stride=3, padding=2)),
    "3d": (F.conv3d, (1, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=1)),
    "t2d_outpad": (
        F.conv_transpose2d,
        (2, 4, 5, 6),
        (4, 3, 3, 3),
        dict(stride=2, padding=1, output_padding=1),
    ),
    "t2d_groups_dil": (
        F.conv_transpose2d,
        (2, 4, 5, 6),
        (4, 3, 3, 2),
        dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
    ),
    "t1d": (F.conv_transpose1d, (2, 3, 7), (3, 2, 4), dict(stride=2)),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("bias", [True, False])
def test_conv_forward_backward(case, bias):
    fn, xs, ws, kw = CASES[case]
    transposed = fn in (F.conv_transpose1d, F.conv_transpose2d)
    cout = ws[1] * kw.get("groups", 1) if transposed else ws[0]
    x, w = rand(xs, F32), rand(ws, F32)
    reduce = ws[1] * max(1, len(xs))  # sums over channels and the window
    if bias:
        grads(lambda a, b, c: fn(a, b, c, **kw), x, w, rand((cout,), F32), reduce=reduce * 8)
    else:
        grads(lambda a, b: fn(a, b, None, **kw), x, w, reduce=reduce * 8)


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_conv_half(dtype):
    x, w, b = rand((2, 4, 8, 8), dtype), rand((5, 4, 3, 3), dtype), rand((5,), dtype)
    grads(lambda a, b_, c: F.conv2d(a, b_, c, padding=1), x, w, b, dtype=dtype, reduce=64)


def test_conv_module_and_errors():
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3, stride=2)
    ).to(DEV)
    y = m(torch.randn(2, 3, 10, 10).to(DEV))
    assert y.device.type == DEV and y.shape == (2, 4, 4, 4)
    y.sum().backward()
    assert all(p.grad is not None and p.grad.device.type == DEV for p in m.parameters())
    with pytest.raises(RuntimeError, match="to have 4 channels, but got 3"):
        F.conv2d(torch.randn(1, 3, 5, 5).to(DEV), torch.randn(2, 4, 3, 3).to(DEV))


def test_small_cnn_trains_like_cpu():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 8, 3, padding=1, groups=2),
        torch.nn.AvgPool2d(2),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(8, 5),
    )
    x, y = torch.randn(4, 3, 12, 12), torch.tensor([0, 1, 4, 2])
    train_matches_cpu(net, x, y, momentum=0.9)


def _to_dev(t, fmt=torch.contiguous_format):
    return t.to(DEV).contiguous(memory_format=fmt).requires_grad_()


@pytest.mark.parametrize(
    "groups,fmt",
    [(1, torch.channels_last), (4, torch.channels_last), (2, torch.contiguous_format)],
    ids=["gemm-cl", "depthwise-cl", "grouped-nchw"],
)
def test_conv_channels_last_in_place_and_out(groups, fmt):
    # channels_last in -> channels_last out (suggest_memory_format), grads like CPU
    x, w, b = torch.randn(2, 4, 7, 6), torch.randn(8, 4 // groups, 3, 3), torch.randn(8)
    dx, dw, db = _to_dev(x, fmt), _to_dev(w, fmt), _to_dev(b)
    y = F.conv2d(dx, dw, db, stride=(2, 1), padding="valid", dilation=(1, 2), groups=groups)
    ref = F.conv2d(x.double().contiguous(memory_format=fmt), w.double(), b.double(), (2, 1), 0, (1, 2), groups)  # fmt: skip
    assert y.is_contiguous(memory_format=fmt)
    torch.testing.assert_close(y.cpu().double(), ref, atol=1e-4, rtol=1e-4)
    g = torch.randn(y.shape)
    y.backward(g.to(DEV))
    rx, rw = x.double().requires_grad_(), w.double().requires_grad_()
    F.conv2d(rx, rw, None, (2, 1), 0, (1, 2), groups).backward(g.double())
    torch.testing.assert_close(dx.grad.cpu().double(), rx.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(dw.grad.cpu().double(), rw.grad, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("deterministic", [False, True])
def test_conv_same_padding_noncontiguous_deterministic(deterministic):
    x = torch.randn(2, 3, 9, 10)[..., ::2]  # non-contiguous, odd sizes
    w = torch.randn(5, 3, 3, 2)
    prev = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic)
    try:
        grads(lambda a, b: F.conv2d(a, b, padding="same", dilation=2), x, w, reduce=72)
        grads(lambda a, b: F.conv1d(a, b, groups=3), torch.randn(1, 3, 7), torch.randn(6, 1, 3))
    finally:
        torch.use_deterministic_algorithms(prev)


def test_conv3d_transposed_half_depthwise():
    x, w = rand((1, 4, 3, 4, 3), F16), rand((4, 1, 2, 2, 3), F16)
    grads(lambda a, b: F.conv_transpose3d(a, b, stride=2, groups=4), x, w, dtype=F16, reduce=24)
    x, w = rand((2, 6, 5, 5), BF16), rand((6, 1, 5, 5), BF16)
    grads(lambda a, b: F.conv2d(a, b, padding=2, groups=6), x, w, dtype=BF16, reduce=50)
