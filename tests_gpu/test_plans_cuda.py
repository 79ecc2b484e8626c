"""Launch plans on the cuda driver: a call's Triton launches are recorded once and replayed
from C++; each specialisation (dtype, alignment, value 1, scalars, aliasing)
gets its own recording, and results stay right."""

import pytest
import torch

import torch_ext
from conftest import DEV

C = torch_ext._C


_base = {}


def stats():
    """Counters since this test began (the C++ counters are process-wide)."""
    now = dict(C._plan_stats())
    return {k: v - _base.get(k, 0) for k, v in now.items() if isinstance(v, int)}


@pytest.fixture(autouse=True)
def fresh_cache():
    assert C._plan_enabled()
    C._plan_clear()
    _base.clear()
    _base.update({k: v for k, v in C._plan_stats().items() if isinstance(v, int)})


def check_add(a, b, **kw):
    out = torch.add(a.to(DEV), b.to(DEV), **kw)
    torch.testing.assert_close(out.cpu(), torch.add(a, b, **kw))


def test_second_call_is_replayed_with_new_data():
    check_add(torch.randn(4099), torch.randn(4099))
    s = stats()
    assert s["recorded"] == 1 and s["replayed"] == 0
    for _ in range(3):
        check_add(torch.randn(4099), torch.randn(4099))
    s = stats()
    assert s["recorded"] == 1 and s["replayed"] == 3


def test_misaligned_inputs_get_their_own_kernel():
    a, b = torch.randn(8193), torch.randn(8193)
    check_add(a[:-1], b[:-1])
    before = stats()["recorded"]
    # One element in: 4-byte offsets, not 16-byte aligned.
    da, db = a.to(DEV), b.to(DEV)
    out = torch.add(da[1:], db[1:])
    torch.testing.assert_close(out.cpu(), a[1:] + b[1:])
    assert stats()["recorded"] == before + 1
    out = torch.add(da[1:], db[1:])  # replayed, still right
    torch.testing.assert_close(out.cpu(), a[1:] + b[1:])
    assert stats()["replayed"] >= 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int32, torch.int64])
def test_other_dtypes_get_their_own_kernel(dtype):
    make = (
        (lambda: torch.randint(-100, 100, (5000,), dtype=dtype))
        if not dtype.is_floating_point
        else (lambda: torch.randn(5000).to(dtype))
    )
    check_add(torch.randn(5000), torch.randn(5000))
    r0 = stats()["recorded"]
    for _ in range(2):
        check_add(make(), make())
    s = stats()
    assert s["recorded"] == r0 + 1 and s["replayed"] >= 1


def test_one_element_and_scalar_values():
    for _ in range(2):
        check_add(torch.randn(1), torch.randn(1))
    for alpha in (2.0, 2.0, -0.5):
        check_add(torch.randn(300), torch.randn(300), alpha=alpha)
    s = stats()
    assert s["recorded"] == 3 and s["replayed"] == 2  # numel 1; alpha 2; alpha -0.5


def test_in_place_and_broadcast():
    a, b = torch.randn(64, 33), torch.randn(33)
    for _ in range(2):
        da = a.to(DEV)
        da.add_(b.to(DEV))
        torch.testing.assert_close(da.cpu(), a + b)
    for _ in range(2):
        check_add(a.t(), torch.randn(33, 64))  # strided
    assert stats()["replayed"] >= 2


def test_replay_runs_on_the_current_stream():
    a, b = torch.randn(1 << 20), torch.randn(1 << 20)
    da, db = a.to(DEV), b.to(DEV)
    torch.add(da, db)
    s = torch.privateuseone.Stream()
    with torch.privateuseone.stream(s):
        out = torch.add(da, db)
    s.synchronize()
    torch.testing.assert_close(out.cpu(), a + b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_per_call_numbers_replay_with_each_calls_values(dtype):
    # _foreach_addcdiv_.ScalarList (Adam's step sizes): one plan, each call's numbers
    # written into the fp32/fp64 kernel parameters at replay
    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(300 + 7 * i, generator=g, dtype=dtype) for i in range(5)]
    ys = [torch.randn_like(x) for x in xs]
    zs = [torch.rand_like(x) + 1 for x in xs]
    dx, dy, dz = ([t.to(DEV) for t in lst] for lst in (xs, ys, zs))
    for step in range(1, 5):
        numbers = [-0.013 * step / (i + 1) for i in range(5)]
        torch._foreach_addcdiv_(dx, dy, dz, numbers)
        torch._foreach_addcdiv_(xs, ys, zs, numbers)
    for a, b in zip(dx, xs):
        torch.testing.assert_close(a.cpu(), b)
    s = stats()
    assert s["recorded"] == 1 and s["replayed"] == 3, C._plan_stats()["reasons"]


def test_replay_on_a_thread_new_to_the_device():
    # The autograd engine runs backward ops on its own device thread: a replay there
    # must make the device's context current (CLIP's backward failed with
    # CUDA_ERROR_INVALID_CONTEXT before).
    import threading

    a, b = torch.randn(1000), torch.randn(1000)
    da, db = a.to(DEV), b.to(DEV)
    torch.add(da, db)  # recorded on this thread
    torch.add(da, db)  # and replayed (its memory now cached for the thread's call)
    out, errors = [], []

    def work():  # device tensors only: no copy that would set the context first
        try:
            out.append(torch.add(da, db))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors, errors
    torch.testing.assert_close(out[0].cpu(), a + b)
    assert stats()["replayed"] >= 2


def test_shape_classes_replay_a_growing_kv_cache():
    """cat and SDPA (size-generic: csrc/launch/PlanShapes.cpp) over 100 KV lengths: the
    compiled kernels replay with each length's sizes, grids and strides, and every
    length is right; guard regions (multiples of 16, block sizes) record again."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    k = torch.randn(1, 4, 16, 64, generator=g)
    kd = k.to(DEV)
    for _ in range(100):
        kn = torch.randn(1, 4, 1, 64, generator=g)
        q = torch.randn(1, 8, 1, 64, generator=g)
        k, kd = torch.cat([k, kn], 2), torch.cat([kd, kn.to(DEV)], 2)
        got = F.scaled_dot_product_attention(q.to(DEV), kd, kd, enable_gqa=True)
        ref = F.scaled_dot_product_attention(q.double(), k.double(), k.double(), enable_gqa=True)
        assert torch.equal(kd.cpu(), k)
        torch.testing.assert_close(got.cpu().double(), ref, rtol=1e-4, atol=1e-4)
    s = stats()
    assert s["generalized"] >= 150 and s["recorded"] <= 30, s


def test_shape_classes_pointwise_sizes():
    for n in range(5000, 5040):
        a, b = torch.randn(3, n), torch.randn(n)
        got = torch.nn.functional.gelu(a.to(DEV) + b.to(DEV))
        torch.testing.assert_close(got.cpu(), torch.nn.functional.gelu(a + b))
    s = stats()
    assert s["generalized"] >= 40 and s["recorded"] <= 16, s


@pytest.mark.parametrize("b_t", [False, True])
def test_tma_products_replay_with_their_scratch(b_t, monkeypatch):
    """The TMA matrix-product kernel (ops/matmul_tma.py, forced here) makes its tensor
    descriptors in a global scratch buffer: recorded once, replayed from C++ with a
    buffer allocated per replay, right every time, misaligned rows on the pointer
    kernel, and the tuner's own choice right too."""
    from torch_ext.ops import matmul, matmul_tma

    real = matmul.tuned
    monkeypatch.setattr(
        matmul, "tuned", lambda f, k, c, run, d: [x for x in c if x[-1] == matmul_tma.TMA][0]
    )
    for i in range(4):
        a = torch.randn(512, 768, dtype=torch.bfloat16)
        b = torch.randn(1024, 768, dtype=torch.bfloat16) if b_t else torch.randn(768, 1024)
        b = b.to(torch.bfloat16)
        bb = b.t() if b_t else b
        out = a.to(DEV) @ bb.to(DEV)
        torch.testing.assert_close(out.cpu().float(), a.float() @ bb.float(), rtol=2e-2, atol=0.5)
    s = stats()
    assert s["recorded"] == 1 and s["replayed"] == 3, s
    monkeypatch.setattr(matmul, "tuned", real)
    a = torch.randn(4096, 1024, dtype=torch.bfloat16)
    w = torch.randn(2816, 1024, dtype=torch.bfloat16)
    out = torch.nn.functional.linear(a.to(DEV), w.to(DEV))
    ref = torch.nn.functional.linear(a.float(), w.float())
    torch.testing.assert_close(out.cpu().float(), ref, rtol=2e-2, atol=1.0)


def test_split_k_products_replay_with_their_scratch(monkeypatch):
    """The warp-specialised product with K split (ops/matmul_ws.py, its first split
    candidate forced: a weight gradient x.t() @ dY, 256 x 512 over 8,192 rows) stores
    float32 partial tiles into scratch and sums them in a second launch: recorded once,
    replayed from C++ with both launches and fresh scratch, right every time."""
    from torch_ext.ops import matmul, matmul_ws

    monkeypatch.setattr(matmul, "tuned", lambda f, k, c, run, d: [x for x in c if len(x) == 7][0])
    for _ in range(4):
        x = torch.randn(8192, 256, dtype=torch.bfloat16)
        dy = torch.randn(8192, 512, dtype=torch.bfloat16)
        out = x.to(DEV).t() @ dy.to(DEV)
        ref = x.float().t() @ dy.float()
        torch.testing.assert_close(out.cpu().float(), ref, rtol=2e-2, atol=1.0)
    s = stats()
    assert s["recorded"] == 1 and s["replayed"] == 3, s
    assert matmul_ws.candidates(256, 512, 8192)[-1][-2] >= 2  # a split was offered


@pytest.mark.parametrize("stride", [1, 2])
def test_channels_last_pointwise_as_one_product(stride, monkeypatch):
    """A channels_last 1x1 convolution's forward and input gradient as one product over
    its pixels (ops/conv_gemm.py, the tuner's "gemm" forced: on Hopper the TMA kernel may
    run it) at a ResNet-50 shape, against cuDNN's."""
    from torch_ext.ops import conv_gemm

    monkeypatch.setattr(
        conv_gemm, "tuned", lambda f, k, c, run, d: ("gemm",) if k[0].endswith("_cl") else c[0]
    )
    cl = torch.channels_last
    x = torch.randn(8, 256, 28, 28, dtype=torch.bfloat16).contiguous(memory_format=cl)
    w = torch.randn(128, 256, 1, 1, dtype=torch.bfloat16) / 16
    g = torch.randn(8, 128, 28 // stride, 28 // stride, dtype=torch.bfloat16)
    # cuDNN's side without the autograd engine: a CUDA backward fails in a process that
    # registered a PrivateUse1 backend (pytorch/pytorch#161129)
    xc, wc, gc = x.cuda(), w.cuda(), g.cuda().contiguous(memory_format=cl)
    ref = (
        torch.nn.functional.conv2d(xc, wc, stride=stride),
        torch.nn.grad.conv2d_input(xc.shape, wc, gc, stride=stride),
    )
    xd = x.to(DEV).contiguous(memory_format=cl).requires_grad_()
    y = torch.nn.functional.conv2d(xd, w.to(DEV), stride=stride)
    (dx,) = torch.autograd.grad(y, xd, g.to(DEV).contiguous(memory_format=cl))
    assert y.is_contiguous(memory_format=cl) and dx.is_contiguous(memory_format=cl)
    for ours, r in zip((y, dx), ref):
        torch.testing.assert_close(ours.float().cpu(), r.float().cpu(), rtol=2e-2, atol=5e-2)
