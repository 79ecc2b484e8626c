"""Convolutions (convolution_overrideable and its backward): forward and the
gradients of input, weight and bias against the CPU in float64, over 1-3
spatial dims, stride, padding, dilation, groups, transposed with output
padding."""

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


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_train_and_eval(dtype, affine):
    x = rand((4, 3, 5, 6), dtype)
    n = x.numel() // 3
    if affine:
        grads(
            lambda t, w, b: F.batch_norm(t, None, None, w, b, training=True),
            x,
            rand((3,), dtype),
            rand((3,), dtype),
            dtype=dtype,
            reduce=n,
        )
    else:
        grads(lambda t: F.batch_norm(t, None, None, training=True), x, dtype=dtype, reduce=n)

    def eval_bn(t):  # running statistics as constants
        rm = torch.full((3,), 0.5, dtype=t.dtype, device=t.device)
        rv = torch.full((3,), 2.0, dtype=t.dtype, device=t.device)
        return F.batch_norm(t, rm, rv, training=False)

    grads(eval_bn, x, dtype=dtype)


def test_batch_norm_module_running_stats():
    bn, bn_d = torch.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3).to(DEV)
    x = torch.randn(4, 3, 5, 6) * 2 + 1
    for _ in range(2):
        ref, out = bn(x), bn_d(x.to(DEV))
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(bn_d.running_mean.cpu(), bn.running_mean)
    torch.testing.assert_close(bn_d.running_var.cpu(), bn.running_var)
    assert bn_d.num_batches_tracked.item() == 2
    bn.eval()
    bn_d.eval()
    torch.testing.assert_close(bn_d(x.to(DEV)).cpu(), bn(x), rtol=1e-5, atol=1e-5)


POOLS = {
    "max_k3s2p1": lambda t: F.max_pool2d(t, 3, 2, 1),
    "max_dil_ceil": lambda t: F.max_pool2d(
        t, (2, 3), (2, 1), (1, 0), dilation=(2, 1), ceil_mode=True
    ),
    "max_1d": lambda t: F.max_pool1d(t.flatten(2), 3, 2),
    "avg_k3s2p1": lambda t: F.avg_pool2d(t, 3, 2, 1),
    "avg_no_pad_count": lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False),
    "avg_ceil_divisor": lambda t: F.avg_pool2d(
        t, (2, 3), (2, 1), (1, 1), ceil_mode=True, divisor_override=4
    ),
    "avg_1d": lambda t: F.avg_pool1d(t.flatten(2), 4, 3),
}


@pytest.mark.parametrize("name", list(POOLS))
@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_pool2d_forward_backward(name, dtype):
    x = rand((2, 3, 9, 8), dtype)
    grads(POOLS[name], x, dtype=dtype, reduce=9)


def test_max_pool_indices_and_nan():
    x = torch.randn(1, 2, 6, 6)
    x[0, 1, 2, 3] = float("nan")
    v, i = F.max_pool2d(x.to(DEV), 2, return_indices=True)
    rv, ri = F.max_pool2d(x, 2, return_indices=True)
    torch.testing.assert_close(v.cpu(), rv, equal_nan=True)
    assert torch.equal(i.cpu(), ri)


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


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_upsample_nearest(dtype):
    x = rand((2, 3, 5, 4), dtype)
    grads(lambda t: F.interpolate(t, scale_factor=2, mode="nearest"), x, dtype=dtype, reduce=4)
    grads(lambda t: F.interpolate(t, size=(7, 9), mode="nearest"), x, dtype=dtype, reduce=4)
    grads(lambda t: F.interpolate(t, size=(3, 2), mode="nearest"), x, dtype=dtype)
    grads(
        lambda t: F.interpolate(t, scale_factor=(1.5, 2.25), mode="nearest"),
        x,
        dtype=dtype,
        reduce=4,
    )


def test_out_and_inplace_variants_of_the_newer_ops():
    """The out= and in-place overloads registered with each op run on the
    device and agree with the CPU."""
    u = torch.rand(4, 5) * 1.8 - 0.9
    p = torch.rand(4, 5) * 0.9 + 0.05
    img = torch.randn(2, 3, 6, 6)

    def same(fn, *args):
        dev = fn(*[a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args])
        ref = fn(*args)
        torch.testing.assert_close(dev.cpu(), ref, rtol=1e-5, atol=1e-5)

    for name in ("asin", "acos", "atan", "erfinv"):
        same(lambda t, n=name: getattr(torch, n)(t, out=torch.empty_like(t)), u)
        same(lambda t, n=name: getattr(t.clone(), n + "_")(), u)
    same(lambda a, b: torch.atan2(a, b, out=torch.empty_like(a)), u, p)
    same(lambda a, b: a.clone().atan2_(b), u, p)
    same(lambda t: torch.logit(t, 0.1, out=torch.empty_like(t)), p)
    same(lambda t: t.clone().logit_(), p)
    same(
        lambda g, t: torch.ops.aten.logit_backward.grad_input(
            g, t, None, grad_input=torch.empty_like(t)
        ),
        u,
        p,
    )
    same(
        lambda t: torch.ops.aten.avg_pool2d.out(
            t, [3, 3], [2, 2], [1, 1], out=torch.empty(2, 3, 3, 3, device=t.device)
        ),
        img,
    )
    g = torch.randn(2, 3, 3, 3)
    same(
        lambda gg, t: torch.ops.aten.avg_pool2d_backward.grad_input(
            gg, t, [3, 3], [2, 2], [1, 1], False, True, None, grad_input=torch.empty_like(t)
        ),
        g,
        img,
    )
    _, idx = F.max_pool2d(img, 2, return_indices=True)
    same(
        lambda t: torch.ops.aten.max_pool2d_with_indices.out(
            t,
            [2, 2],
            [2, 2],
            [0, 0],
            [1, 1],
            False,
            out=torch.empty(2, 3, 3, 3, device=t.device),
            indices=torch.empty(2, 3, 3, 3, dtype=torch.int64, device=t.device),
        )[0],
        img,
    )
    same(
        lambda gg, t, i: torch.ops.aten.max_pool2d_with_indices_backward.grad_input(
            gg, t, [2, 2], [2, 2], [0, 0], [1, 1], False, i, grad_input=torch.empty_like(t)
        ),
        g,
        img,
        idx,
    )
    same(
        lambda t: torch.ops.aten.upsample_nearest2d.out(
            t, [12, 9], None, None, out=torch.empty(2, 3, 12, 9, device=t.device)
        ),
        img,
    )
    gu = torch.randn(2, 3, 12, 9)
    same(
        lambda gg: torch.ops.aten.upsample_nearest2d_backward.grad_input(
            gg,
            [12, 9],
            [2, 3, 6, 6],
            None,
            None,
            grad_input=torch.empty(2, 3, 6, 6, device=gg.device),
        ),
        gu,
    )


def test_roll_forward_backward():
    x = rand((3, 4, 5), F32)
    grads(lambda t: torch.roll(t, (2, -1), (0, 2)), x)
    grads(lambda t: torch.roll(t, 7), x)
    grads(lambda t: torch.roll(t.transpose(0, 2), 1, 1), x)
