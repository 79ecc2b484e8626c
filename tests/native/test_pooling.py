"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the pooling
family, 1-d and 2-d (max/avg/adaptive pooling, max_unpool, their out=
overloads)."""

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, grads, rand, same, train_matches_cpu


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


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


def test_max_unpool2d_round_trip():
    torch.manual_seed(3)
    x = torch.randn(2, 3, 6, 8)
    v, i = F.max_pool2d(x, 2, return_indices=True)
    same(F.max_unpool2d(v.to(DEV), i.to(DEV), 2), F.max_unpool2d(v, i, 2))
    same(
        F.max_unpool2d(v.to(DEV), i.to(DEV), 2, output_size=(7, 9)),
        F.max_unpool2d(v, i, 2, output_size=(7, 9)),
    )
    with pytest.raises(RuntimeError, match="indices to be same as that of the input"):
        F.max_unpool2d(v.to(DEV), i[..., :2].to(DEV), 2)


DTYPES = [F32, F16, BF16]


CL = torch.channels_last


def _layout(kind):
    """Input of the op inside fn, as both runs (device and CPU) see it."""
    return {
        "contig": lambda t: t,
        "channels_last": lambda t: t.contiguous(memory_format=CL)
        if t.dim() == 4
        else t.permute(1, 2, 0).contiguous().permute(2, 0, 1),  # (C, H, W) with C innermost
        "transposed": lambda t: t.transpose(-1, -2),
    }[kind]


ADAPTIVE_SIZES = [(1, 1), (3, 4), (7, 9), (10, 13), (5, 2)]  # input planes are 7 x 9


@pytest.mark.parametrize("size", ADAPTIVE_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_avg_pool2d(size, dtype):
    x = rand((2, 3, 7, 9), dtype)
    reduce = max(1, (7 // size[0] + 1) * (9 // size[1] + 1))
    # torch._adaptive_avg_pool2d itself: F.adaptive_avg_pool2d sends (1, 1) to mean.
    grads(lambda t: torch._adaptive_avg_pool2d(t, size), x, dtype=dtype, reduce=reduce)
    grads(lambda t: F.adaptive_avg_pool2d(t, size), x, dtype=dtype, reduce=reduce)


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_adaptive_avg_pool2d_layouts_batch1_and_3d(layout):
    f = _layout(layout)
    grads(lambda t: torch._adaptive_avg_pool2d(f(t), (4, 3)), rand((1, 5, 8, 6), F32), reduce=9)
    grads(lambda t: torch._adaptive_avg_pool2d(f(t), (1, 1)), rand((1, 5, 8, 6), F32), reduce=48)
    grads(lambda t: F.adaptive_avg_pool2d(f(t), (5, 11)), rand((3, 8, 6), F32), reduce=4)
    out = torch._adaptive_avg_pool2d(
        rand((2, 3, 6, 6), F32).to(DEV).contiguous(memory_format=CL), (2, 2)
    )
    assert out.is_contiguous(memory_format=CL)  # as PyTorch: the input's memory format


@pytest.mark.parametrize("size", ADAPTIVE_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_max_pool2d(size, dtype):
    x = rand((2, 3, 7, 9), dtype)
    grads(lambda t: F.adaptive_max_pool2d(t, size), x, dtype=dtype)
    v, i = F.adaptive_max_pool2d(x.to(DEV), size, return_indices=True)
    rv, ri = F.adaptive_max_pool2d(x, size, return_indices=True)
    assert i.dtype == torch.int64 and torch.equal(i.cpu(), ri)  # ties: the first, as on CPU
    assert torch.equal(v.cpu(), rv)


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_adaptive_max_pool2d_layouts_batch1_and_3d(layout):
    f = _layout(layout)
    grads(lambda t: F.adaptive_max_pool2d(f(t), (4, 3)), rand((1, 5, 8, 6), F32))
    grads(lambda t: F.adaptive_max_pool2d(f(t), (1, 1)), rand((1, 5, 8, 6), F32))
    grads(lambda t: F.adaptive_max_pool2d(f(t), (9, 11)), rand((3, 8, 6), F32))
    x = rand((2, 3, 8, 6), F32)
    _, i = F.adaptive_max_pool2d(f(x.to(DEV)), (3, 5), return_indices=True)
    assert torch.equal(i.cpu(), F.adaptive_max_pool2d(f(x), (3, 5), return_indices=True)[1])


def test_adaptive_max_pool2d_nan_and_inf():
    x = torch.randn(1, 2, 6, 6)
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 2, 0] = float("nan")  # the same 3x3 window: the last NaN wins
    x[0, 1, :3, :3] = float("-inf")  # an all -inf window: its first index
    v, i = F.adaptive_max_pool2d(x.to(DEV), (2, 2), return_indices=True)
    rv, ri = F.adaptive_max_pool2d(x, (2, 2), return_indices=True)
    torch.testing.assert_close(v.cpu(), rv, equal_nan=True)
    assert torch.equal(i.cpu(), ri)
    assert ri[0, 0, 0, 0] == 12 and ri[0, 1, 0, 0] == 0


def test_adaptive_pool_errors():
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        torch._adaptive_avg_pool2d(torch.randn(4, 4).to(DEV), (2, 2))
    with pytest.raises(RuntimeError, match="non-zero size for non-batch dimensions"):
        torch._adaptive_avg_pool2d(torch.randn(1, 3, 0, 4).to(DEV), (2, 2))
    with pytest.raises(RuntimeError, match="non-zero size for non-batch dimensions"):
        torch._adaptive_avg_pool2d(torch.randn(1, 3, 0, 4), (2, 2))  # as on CPU
    with pytest.raises(RuntimeError, match="3D or 4D"):
        torch.ops.aten.adaptive_max_pool2d(torch.randn(4, 4).to(DEV), [2, 2])
    with pytest.raises(RuntimeError, match="does not match"):
        torch.ops.aten._adaptive_avg_pool2d_backward(
            torch.randn(2, 2, 2, 2).to(DEV), torch.randn(2, 3, 5, 5).to(DEV)
        )


def test_adaptive_avg_pool2d_out_variant():
    x = torch.randn(2, 3, 7, 5)
    res = torch.ops.aten.adaptive_avg_pool2d.out(x.to(DEV), [3, 2], out=torch.empty(0, device=DEV))
    torch.testing.assert_close(
        res.cpu(), torch.ops.aten.adaptive_avg_pool2d.out(x, [3, 2], out=torch.empty(0))
    )


def test_resnet_head_and_unet_block_train_like_cpu():
    """A small net with reflection padding, bilinear upsampling and an adaptive
    pooling head: three SGD steps on the device track the CPU's."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.ReflectionPad2d(1),
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.ReLU(),
        torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
        torch.nn.ReplicationPad2d((1, 0, 0, 1)),
        torch.nn.Conv2d(4, 4, 2),
        torch.nn.AdaptiveMaxPool2d((3, 3)),
        torch.nn.AdaptiveAvgPool2d((2, 2)),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 5),
    )
    x, y = torch.randn(2, 3, 6, 6), torch.tensor([0, 4])
    train_matches_cpu(net, x, y)
