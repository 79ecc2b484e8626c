"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
pointwise family's special functions beyond the basic set (activations:
test_pointwise_activation.py)
(clamp with tensor bounds, shifts, special.*,
polygamma, nextafter, gcd/lcm, zeta, mvlgamma, erfcx/log_ndtr/ndtri)."""

import math

import pytest

import torch

from helpers import DEV, REGISTERED, assert_close, check, rand, to_dev
from helpers import edge, some_grads


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


FLOATS = [F32, F16, BF16]


INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


INF, NAN = math.inf, math.nan


UNARY_SPECIAL = {
    "lgamma": torch.lgamma,
    "digamma": torch.digamma,
    "i0": torch.i0,
    "sinc": torch.sinc,
    "special_i0e": torch.special.i0e,
    "special_i1": torch.special.i1,
    "special_i1e": torch.special.i1e,
}


# Ranges with the interesting parts (poles of lgamma/digamma at non-positive integers).
RANGE = {
    "lgamma": (-12, 12),
    "digamma": (-12, 12),
    "i0": (-30, 30),
    "sinc": (-6, 6),
    "special_i0e": (-60, 60),
    "special_i1": (-30, 30),
    "special_i1e": (-60, 60),
}


NDTR = {
    "special_erfcx": (torch.special.erfcx, (-8, 30)),
    "special_log_ndtr": (torch.special.log_ndtr, (-40, 12)),
    "special_ndtri": (torch.special.ndtri, (0, 1)),
}


def test_registered():
    names = {
        "mish",
        "mish.out",
        "mish_",
        "mish_backward",
        "log_sigmoid_forward",
        "log_sigmoid_forward.output",
        "log_sigmoid_backward",
        "log_sigmoid_backward.grad_input",
        "binary_cross_entropy",
        "binary_cross_entropy.out",
        "binary_cross_entropy_backward",
        "binary_cross_entropy_backward.grad_input",
        "smooth_l1_loss",
        "smooth_l1_loss.out",
        "smooth_l1_loss_backward.grad_input",
        "huber_loss",
        "huber_loss.out",
        "huber_loss_backward.out",
        "_prelu_kernel",
        "_prelu_kernel_backward",
        "glu",
        "glu.out",
        "glu_backward",
        "glu_backward.grad_input",
        "clamp_min.Tensor",
        "clamp_min.Tensor_out",
        "clamp_min_.Tensor",
        "clamp_max.Tensor",
        "clamp_max.Tensor_out",
        "clamp_max_.Tensor",
        "__lshift__.Scalar",
        "__lshift__.Tensor",
        "__ilshift__.Scalar",
        "__ilshift__.Tensor",
        "__rshift__.Scalar",
        "__rshift__.Tensor",
        "__irshift__.Scalar",
        "__irshift__.Tensor",
        "bitwise_left_shift.Tensor",
        "bitwise_left_shift_.Tensor",
        "bitwise_right_shift.Tensor",
        "bitwise_right_shift_.Tensor",
        "lgamma",
        "lgamma.out",
        "lgamma_",
        "digamma",
        "digamma.out",
        "digamma_",
        "polygamma",
        "polygamma.out",
        "i0",
        "i0.out",
        "i0_",
        "sinc",
        "sinc.out",
        "sinc_",
        "nextafter",
        "nextafter.out",
        "nextafter_",
        "gcd",
        "gcd.out",
        "gcd_",
        "special_i0e",
        "special_i0e.out",
        "special_i1",
        "special_i1.out",
        "special_i1e",
        "special_i1e.out",
        "special_erfcx",
        "special_erfcx.out",
        "special_log_ndtr",
        "special_log_ndtr.out",
        "special_ndtri",
        "special_ndtri.out",
        "sgn",
        "sgn.out",
        "sgn_",
        "lcm",
        "lcm.out",
        "lcm_",
        "special_zeta",
        "special_zeta.out",
    }
    assert sorted(names - REGISTERED) == []


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64, torch.uint8])
def test_clamp_tensor_bounds(dtype):
    x = rand((6, 5), dtype, -5, 5, noncontig=True)
    lo, hi = rand((5,), dtype, -2, 0), rand((6, 1), dtype, 0, 2)
    if dtype.is_floating_point:
        x[0, 0], lo[1], hi[2, 0] = NAN, NAN, NAN
    for name in ("clamp_min", "clamp_max"):
        b = lo if name == "clamp_min" else hi
        fn = getattr(torch, name)
        check(fn, x, b)
        out = torch.empty(0, dtype=dtype, device=DEV)
        assert fn(x.to(DEV), b.to(DEV), out=out) is out
        assert_close(out, fn(x, b), dtype)
        y = x.to(DEV)
        assert getattr(y, name + "_")(b.to(DEV)) is y
        assert_close(y, fn(x, b), dtype)
    if dtype.is_floating_point:
        some_grads(
            lambda a, b: torch.clamp_min(a, b),
            rand((6, 5), dtype),
            rand((5,), dtype),
            dtype=dtype,
            reduce=6,
        )
        some_grads(
            lambda a, b: torch.clamp_max(a, b),
            rand((6, 5), dtype),
            rand((6, 1), dtype),
            dtype=dtype,
            reduce=5,
        )
    # promotion: an integer tensor clamped by a float tensor
    check(torch.clamp_min, torch.arange(-3, 3), torch.tensor([0.5]))


@pytest.mark.parametrize("dtype", INTS)
def test_shifts(dtype):
    bits = torch.iinfo(dtype).bits
    x = rand((6, 7), dtype, -100, 100, noncontig=True)
    s = torch.randint(0, bits + 3, (6, 7)).to(dtype)  # shifts past the width included
    s[0, 0] = bits
    for fn in (
        torch.bitwise_left_shift,
        torch.bitwise_right_shift,
        lambda a, b: a << b,
        lambda a, b: a >> b,
        torch.Tensor.__lshift__,
        torch.Tensor.__rshift__,
    ):
        check(fn, x, s)
        check(fn, x, s[:1])  # broadcasting
        for k in (0, 1, 3, bits - 1, bits, bits + 1):
            check(fn, x, k)
    for name in ("__ilshift__", "__irshift__", "bitwise_left_shift_", "bitwise_right_shift_"):
        y, r = x.to(DEV), x.clone()
        assert getattr(y, name)(s.to(DEV)) is y
        getattr(r, name)(s)
        assert_close(y, r)
        if name.startswith("__"):
            y, r = x.to(DEV), x.clone()
            getattr(y, name)(2)
            getattr(r, name)(2)
            assert_close(y, r)


def test_shift_errors():
    with pytest.raises(RuntimeError):
        torch.randn(3, device=DEV) << 1
    with pytest.raises(RuntimeError):
        torch.randn(3, device=DEV) >> torch.ones(3, device=DEV, dtype=torch.int64)


@pytest.mark.parametrize("name", sorted(UNARY_SPECIAL))
@pytest.mark.parametrize("dtype", FLOATS)
def test_special_unary(name, dtype):
    fn = UNARY_SPECIAL[name]
    lo, hi = RANGE[name]
    x = rand((9, 11), dtype, lo, hi, noncontig=True)
    check(fn, x)
    check(
        fn,
        edge(dtype, 1e-6, -1e-6, 2.0, -3.0, 3.5, 30.0, 1e4, -1e4 - 0.5 if dtype == F32 else -7.5),
    )
    check(fn, torch.linspace(lo, hi, 301, dtype=torch.float64).to(dtype))
    # integer inputs compute in the default float dtype
    if dtype == F32:
        check(fn, torch.arange(-6, 7, dtype=torch.int32))
        check(fn, torch.arange(0, 7, dtype=torch.int64))
    # out= and in-place
    ref, same = fn(x.double()), fn(x)
    out = torch.empty(0, dtype=dtype, device=DEV)
    assert fn(x.to(DEV), out=out) is out
    assert_close(out, ref, dtype, ref_same=same)
    if hasattr(torch.Tensor, name + "_"):
        y = x.to(DEV)
        assert getattr(y, name + "_")() is y
        assert_close(y, ref, dtype, ref_same=same)


@pytest.mark.parametrize("name", sorted(UNARY_SPECIAL))
@pytest.mark.parametrize("dtype", FLOATS)
def test_special_unary_backward(name, dtype):
    fn = UNARY_SPECIAL[name]
    lo, hi = RANGE[name]
    x = rand((7, 6), dtype, max(lo, -4) + 0.05, min(hi, 6))
    x = torch.where((x.double() - x.double().round()).abs() < 0.05, x + 0.25, x)  # away from poles
    if name in ("lgamma", "digamma"):
        x = (
            x.abs() + 0.1 if dtype != F32 else x
        )  # negative arguments only in float32 (fp16 pole error)
    if dtype == BF16 and name == "sinc":
        return  # the backward is a composite, pi x cos(pi x) - sin(pi x) cancels in bfloat16 steps
    if dtype != F32 and name in ("special_i1", "special_i1e"):
        # PyTorch's i1_backward/i1e_backward have no Half/BFloat16 version (autograd code, any device)
        for dev in ("cpu", DEV):
            with pytest.raises(NotImplementedError, match="Half|BFloat16"):
                fn(x.to(dev).requires_grad_()).sum().backward()
        return
    some_grads(fn, x, dtype=dtype)


def test_special_poles_and_signs():
    d = torch.tensor([0.0, -0.0, -1.0, -2.0, -INF, INF, NAN])
    res = torch.digamma(d.to(DEV)).cpu()
    assert torch.equal(res[:2], torch.tensor([-INF, INF]))
    assert res[2:4].isnan().all() and res[4].isnan() and res[5] == INF and res[6].isnan()
    assert torch.equal(torch.lgamma(d.to(DEV)).cpu()[:6], torch.full((6,), INF))
    # i0/i1 at +-inf are nan as on CPU; the scaled forms are (signed) zero
    e = torch.tensor([INF, -INF])
    for fn in (torch.i0, torch.special.i1, torch.special.i0e, torch.special.i1e):
        torch.testing.assert_close(fn(e.to(DEV)).cpu(), fn(e), equal_nan=True, rtol=0, atol=0)
    assert (
        torch.special.i1e(e.to(DEV)).cpu()[1].item() == 0.0
        and math.copysign(1.0, torch.special.i1e(e.to(DEV)).cpu()[1].item()) == -1.0
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_polygamma(n, dtype):
    x = rand((8, 9), dtype, -6, 10, noncontig=True)
    x = torch.where((x.double() - x.double().round()).abs() < 0.05, x + 0.3, x)  # away from poles
    if dtype != F32:
        x = x.abs() + 0.2  # fp16/bf16 inputs near poles: results past the dtype's range
    check(lambda t: torch.polygamma(n, t), x)
    check(
        lambda t: torch.polygamma(n, t),
        torch.tensor([0.5, 1.0, 2.0, 10.0, 1e-3, 30.0, 200.0, NAN], dtype=dtype),
    )
    some_grads(lambda t: torch.polygamma(n, t), x.abs() + 0.5, dtype=dtype)
    # method, out= and in-place (polygamma_ is a composite over polygamma.out)
    ref, same = torch.polygamma(n, x.double()), torch.polygamma(n, x)
    out = torch.empty(0, dtype=dtype, device=DEV)
    assert torch.polygamma(n, x.to(DEV), out=out) is out
    assert_close(out, ref, dtype, ref_same=same)
    y = x.to(DEV)
    assert y.polygamma_(n) is y
    assert_close(y, ref, dtype, ref_same=same)
    assert_close(x.to(DEV).polygamma(n), ref, dtype, ref_same=same)


def test_polygamma_edges():
    x = torch.tensor([0.0, -1.0, -3.0, INF, -INF, NAN, -0.5, -7.25, -22.5])
    for n in (1, 2, 3, 4):
        res = torch.polygamma(n, x.to(DEV)).cpu()
        # poles: (-1)^(n+1) * inf at the non-positive integers
        sign = 1.0 if n % 2 else -1.0
        assert torch.equal(res[:3], torch.full((3,), sign * INF)), (n, res)
        if n >= 2:  # elsewhere as on CPU (which gives finite values at n = 1's poles)
            ref = torch.polygamma(n, x.double())
            torch.testing.assert_close(res.double(), ref, equal_nan=True, rtol=1e-5, atol=1e-5)
    assert torch.polygamma(1, torch.tensor([INF, -INF], device=DEV)).cpu()[0] == 0.0
    assert torch.polygamma(1, torch.tensor([-INF], device=DEV)).cpu().isnan().all()
    with pytest.raises(RuntimeError, match="negative n"):
        torch.polygamma(-1, torch.ones(3, device=DEV))


@pytest.mark.parametrize("dtype", FLOATS + [torch.float64])
def test_nextafter(dtype):
    info = torch.finfo(dtype)
    a = torch.tensor(
        [
            0.0,
            0.0,
            -0.0,
            1.0,
            -1.0,
            1.0,
            INF,
            -INF,
            NAN,
            2.0,
            info.max,
            info.tiny,
            -info.tiny,
            3.0,
            1e-3,
        ],
        dtype=dtype,
    )
    b = torch.tensor(
        [1.0, -1.0, 1.0, 2.0, -2.0, 1.0, 0.0, 0.0, 0.0, NAN, INF, 0.0, 0.0, -3.0, 0.0], dtype=dtype
    )
    res = torch.nextafter(a.to(DEV), b.to(DEV)).cpu()
    ref = torch.nextafter(a, b)
    idt = {2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    nan = ref.isnan()
    assert torch.equal(res.isnan(), nan)
    assert torch.equal(res[~nan].view(idt), ref[~nan].view(idt)), (res, ref)  # bit for bit
    x, y = rand((7, 5), dtype, -5, 5, noncontig=True), rand((5,), dtype, -5, 5)
    for args in ((x, y), (y, x), (x, x)):
        r = torch.nextafter(*to_dev(args)).cpu()
        assert torch.equal(r.view(idt), torch.nextafter(*args).view(idt))
    z = x.to(DEV)
    assert z.nextafter_(y.to(DEV)) is z
    assert torch.equal(z.cpu().view(idt), torch.nextafter(x, y).view(idt))
    out = torch.empty(0, dtype=dtype, device=DEV)
    assert torch.nextafter(x.to(DEV), y.to(DEV), out=out) is out
    assert torch.equal(out.cpu().view(idt), torch.nextafter(x, y).view(idt))
    # a 0-dim operand
    r = torch.nextafter(x.to(DEV), torch.tensor(0.0, dtype=dtype, device=DEV)).cpu()
    assert torch.equal(r.view(idt), torch.nextafter(x, torch.tensor(0.0, dtype=dtype)).view(idt))


def test_nextafter_mixed_and_errors():
    x, y = torch.randn(4, 3), torch.randn(3, dtype=torch.float64)
    r = torch.nextafter(x.to(DEV), y.to(DEV)).cpu()
    assert r.dtype == torch.float64 and torch.equal(r, torch.nextafter(x, y))
    with pytest.raises(RuntimeError):
        torch.nextafter(torch.arange(3, device=DEV), torch.arange(3, device=DEV))


@pytest.mark.parametrize("dtype", INTS)
def test_gcd(dtype):
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, (8, 9), dtype=dtype)
    b = torch.randint(info.min, info.max, (8, 9), dtype=dtype)
    a[0, :6] = torch.tensor([0, 0, info.min, info.max, 12, info.max], dtype=torch.int64).to(dtype)
    b[0, :6] = torch.tensor([0, 7, 0, info.max - 1, 18, 1], dtype=torch.int64).to(dtype)
    check(torch.gcd, a, b)
    check(torch.gcd, a.t(), b.t())  # non-contiguous
    check(torch.gcd, a, b[:1])  # broadcasting
    small = torch.randint(0 if dtype == torch.uint8 else -40, 40, (50,), dtype=dtype)
    check(torch.gcd, small, small.flip(0))
    y = a.to(DEV)
    assert y.gcd_(b.to(DEV)) is y
    assert_close(y, torch.gcd(a, b))
    out = torch.empty(0, dtype=dtype, device=DEV)
    assert torch.gcd(a.to(DEV), b.to(DEV), out=out) is out
    assert_close(out, torch.gcd(a, b))


@pytest.mark.parametrize("dtype", INTS)
def test_lcm(dtype):
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, (8, 9), dtype=dtype)
    b = torch.randint(info.min, info.max, (8, 9), dtype=dtype)
    a[0, :4] = torch.tensor([0, 0, 6, info.max], dtype=torch.int64).to(dtype)
    b[0, :4] = torch.tensor([0, 7, 4, 2], dtype=torch.int64).to(dtype)
    check(torch.lcm, a, b)  # products past the type wrap as on CPU
    small = torch.randint(0 if dtype == torch.uint8 else -12, 12, (6, 7), dtype=dtype)
    check(torch.lcm, small, small.t().contiguous().t().flip(0))
    check(torch.lcm, small, small[:1])
    y = small.to(DEV)
    assert y.lcm_(small.flip(1).to(DEV)) is y
    assert_close(y, torch.lcm(small, small.flip(1)))
    out = torch.empty(0, dtype=dtype, device=DEV)
    assert torch.lcm(a.to(DEV), b.to(DEV), out=out) is out
    assert_close(out, torch.lcm(a, b))


def test_zeta():
    for dtype in (F32, torch.float64):
        x = rand((9, 8), dtype, 1.01, 30, noncontig=True)
        q = rand((9, 8), dtype, 0.01, 20)
        check(torch.special.zeta, x, q)
        check(torch.special.zeta, x, q[:1])  # broadcasting
        check(
            torch.special.zeta,
            torch.randint(2, 9, (50,)).to(dtype),
            -torch.rand(50, dtype=torch.float64).to(dtype) * 15,
        )  # q < 0 with integer x
        xe = torch.tensor(
            [1.0, 0.5, 2.0, 2.0, 2.0, 2.5, 3.0, 2.0, 2.0, NAN, 2.0, 30.0, 1.5, 2.0, 200.0],
            dtype=dtype,
        )
        qe = torch.tensor(
            [1.0, 1.0, 0.0, -1.0, -1.5, -1.5, -2.5, INF, -INF, 1.0, NAN, 0.5, 1e-3, 1e10, 1.5],
            dtype=dtype,
        )
        check(torch.special.zeta, xe, qe)
        out = torch.empty(0, dtype=dtype, device=DEV)
        assert torch.special.zeta(x.to(DEV), q.to(DEV), out=out) is out
        assert_close(
            out,
            torch.special.zeta(x.double(), q.double()),
            dtype,
            ref_same=torch.special.zeta(x, q),
        )
    check(torch.special.zeta, 2.0, rand((5,), F32, 0.5, 4))  # the Scalar overloads (composites)
    check(torch.special.zeta, rand((5,), F32, 1.5, 4), 3.0)
    check(torch.special.zeta, torch.arange(2, 6), torch.arange(1, 5))  # integers -> float32
    # the gradient with respect to q: -x * zeta(x + 1, q) (autograd composite)
    some_grads(torch.special.zeta, rand((4, 3), F32, 1.5, 6), rand((4, 3), F32, 0.5, 5), const=(0,))


def test_gcd_errors():
    with pytest.raises(RuntimeError):
        torch.lcm(torch.ones(3, device=DEV), torch.ones(3, device=DEV))
    with pytest.raises(RuntimeError):
        torch.gcd(torch.ones(3, device=DEV), torch.ones(3, device=DEV))
    with pytest.raises(RuntimeError):
        torch.gcd(
            torch.ones(3, dtype=torch.bool, device=DEV), torch.ones(3, dtype=torch.bool, device=DEV)
        )


@pytest.mark.parametrize("dtype", FLOATS)
def test_mvlgamma(dtype):
    # a composite over lgamma and arange (arange in bfloat16 went through a
    # bitwise float64 -> bfloat16 cast in the interpreter)
    x = rand((5, 4), dtype, 2.5, 8)
    for p in (1, 3, 5):
        check(torch.mvlgamma, x, p, reduce=p)
    assert torch.equal(
        torch.arange(-1.5, 0.5, 0.5, dtype=dtype, device=DEV).cpu(),
        torch.arange(-1.5, 0.5, 0.5, dtype=dtype),
    )


@pytest.mark.parametrize("name", sorted(NDTR))
def test_erfcx_log_ndtr_ndtri(name):
    # float32 (PyTorch's CPU kernels take float32/float64 only) and float64
    fn, (lo, hi) = NDTR[name]
    for dtype in (F32, torch.float64):
        x = rand((9, 11), dtype, lo, hi, noncontig=True)
        check(fn, x)
        check(fn, torch.linspace(lo, hi, 401, dtype=torch.float64).to(dtype))
        if name == "special_ndtri":
            e = torch.tensor([0.0, 1.0, 0.5, 1e-30, 1 - 1e-7, 1e-7, -0.5, 1.5, NAN], dtype=dtype)
        else:
            e = torch.tensor(
                [0.0, -0.0, 1.0, -1.0, 5.0, -5.0, 26.0, -26.0, -27.0, 1e4, -1e4, INF, -INF, NAN],
                dtype=dtype,
            )
        check(fn, e)
        out = torch.empty(0, dtype=dtype, device=DEV)
        assert fn(x.to(DEV), out=out) is out
        assert_close(out, fn(x.double()), dtype, ref_same=fn(x))
    check(
        fn, torch.arange(0, 2) if name == "special_ndtri" else torch.arange(-5, 6)
    )  # integers -> float32
    x = rand((6, 5), F32, max(lo, -6) + 0.01, min(hi, 6) - 0.01)
    some_grads(fn, x)
    # fp16/bf16 inputs: computed in float64 and rounded (PyTorch's CPU kernels refuse these dtypes)
    for dt in (F16, BF16):
        xh = rand((7, 3), dt, max(lo, -4) + 0.01, min(hi, 4) - 0.01)
        assert_close(fn(xh.to(DEV)), fn(xh.double()), dt)
