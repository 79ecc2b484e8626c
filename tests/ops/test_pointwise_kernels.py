"""Pointwise kernels against PyTorch: functional forms (broadcast, promotion)
and the TensorIterator convention (strided operands, numbers)."""

import math

import pytest
import torch
import torch.nn.functional as F

from torch_ext.ops import KERNELS, activation, binary, copy, ternary, unary
from torch_ext.ops._pointwise import coalesce

from helpers import FLOAT_DTYPES, INT_DTYPES, randn, to_ref
from helpers import assert_kernel_close as assert_close

SHAPES = [(), (0,), (1027,), (7, 13), (3, 1, 5)]

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

UNARY_FLOAT = [
    ("abs", torch.abs, None),
    ("neg", torch.neg, None),
    ("exp", torch.exp, None),
    ("exp2", torch.exp2, None),
    ("expm1", torch.expm1, None),
    ("log", torch.log, (0.01, 10)),
    ("log2", torch.log2, (0.01, 10)),
    ("log10", torch.log10, (0.01, 10)),
    ("log1p", torch.log1p, (-0.9, 10)),
    ("sqrt", torch.sqrt, (0, 10)),
    ("rsqrt", torch.rsqrt, (0.01, 10)),
    ("reciprocal", torch.reciprocal, (0.1, 10)),
    ("sin", torch.sin, None),
    ("cos", torch.cos, None),
    ("tan", torch.tan, (-1.2, 1.2)),
    ("tanh", torch.tanh, None),
    ("sinh", torch.sinh, None),
    ("cosh", torch.cosh, None),
    ("sigmoid", torch.sigmoid, None),
    ("erf", torch.erf, None),
    ("erfc", torch.erfc, None),
    ("floor", torch.floor, (-5, 5)),
    ("ceil", torch.ceil, (-5, 5)),
    ("trunc", torch.trunc, (-5, 5)),
    ("frac", torch.frac, (-5, 5)),
    ("round", torch.round, (-5, 5)),
    ("sign", torch.sign, None),
    ("signbit", torch.signbit, None),
    ("isnan", torch.isnan, None),
    ("isinf", torch.isinf, None),
    ("isfinite", torch.isfinite, None),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,ref_fn,domain", UNARY_FLOAT, ids=[u[0] for u in UNARY_FLOAT])
def test_unary_float(name, ref_fn, domain, dtype, device):
    op = getattr(unary, name)
    for shape in SHAPES:
        lo, hi = domain or (None, None)
        x = randn(shape, dtype, "cpu", lo, hi)
        if name in ("isnan", "isinf", "isfinite", "sign", "signbit") and x.numel() > 4:
            x.view(-1)[:4] = torch.tensor([math.nan, math.inf, -math.inf, -0.0], dtype=dtype)
        x = x.to(device)
        res = op(x)
        ref = ref_fn(to_ref(x))
        if res.dtype.is_floating_point:
            ref = ref.to(dtype)  # reference rounding as the kernel stores it
        assert res.shape == ref.shape
        assert_close(res, ref, dtype if res.dtype.is_floating_point else None)


def test_unary_noncontiguous_fp64(device):
    x = randn((9, 16), torch.float64, device)[:, ::3]
    assert_close(unary.exp(x), torch.exp(to_ref(x)))
    assert_close(unary.tanh(x.t()), torch.tanh(to_ref(x).t()))


@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.int8, torch.uint8])
def test_unary_int(dtype, device):
    x = randn((5, 11), dtype, device, 0 if dtype == torch.uint8 else -100, 100)
    for name, ref in [
        ("abs", torch.abs),
        ("neg", torch.neg),
        ("sign", torch.sign),
        ("bitwise_not", torch.bitwise_not),
        ("floor", torch.floor),
    ]:
        if dtype == torch.uint8 and name in ("abs", "neg"):
            continue
        assert_close(getattr(unary, name)(x), ref(x.cpu()))
    assert_close(unary.exp(x), torch.exp(x.cpu().double()).float(), torch.float32)


def test_bool_ops(device):
    a = randn((33,), torch.bool, device)
    b = randn((33,), torch.bool, device)
    assert_close(unary.bitwise_not(a), ~a.cpu())
    assert_close(binary.add(a, b, True), a.cpu() + b.cpu())
    assert_close(binary.bitwise_xor(a, b), a.cpu() ^ b.cpu())
    assert_close(unary.logical_not(a), ~a.cpu())


BINARY = [
    ("mul", torch.mul),
    ("div_true", torch.true_divide),
    ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ("remainder", torch.remainder),
    ("fmod", torch.fmod),
    ("maximum", torch.maximum),
    ("minimum", torch.minimum),
    ("fmax", torch.fmax),
    ("fmin", torch.fmin),
    ("eq", torch.eq),
    ("ne", torch.ne),
    ("lt", torch.lt),
    ("le", torch.le),
    ("gt", torch.gt),
    ("ge", torch.ge),
    ("logaddexp", torch.logaddexp),
    ("copysign", torch.copysign),
    ("hypot", torch.hypot),
    ("xlogy", torch.xlogy),
    ("logical_and", torch.logical_and),
    ("logical_or", torch.logical_or),
    ("logical_xor", torch.logical_xor),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.float64])
@pytest.mark.parametrize("name,ref_fn", BINARY, ids=[b[0] for b in BINARY])
def test_binary_float(name, ref_fn, dtype, device):
    op = getattr(binary, name)
    cases = [((7, 13), (7, 13)), ((3, 1, 5), (4, 1)), ((0, 3), (3,)), ((), (6,)), ((1000,), ())]
    for sa, sb in cases:
        a = randn(sa, dtype, device)
        b = randn(sb, dtype, device)
        if name in ("div_floor", "div_trunc", "remainder", "fmod"):
            a = a * 4
        res = op(a, b)
        if name in ("div_trunc", "div_floor") and dtype in (torch.float16, torch.bfloat16):
            # Rounding of a quotient near an integer follows the fp32 op math (as PyTorch's).
            ref = ref_fn(a.cpu().float(), b.cpu().float())
        else:
            ref = ref_fn(to_ref(a), to_ref(b))
        if ref.is_floating_point():
            ref = ref.to(dtype)
        assert_close(
            res,
            ref,
            dtype if res.dtype.is_floating_point else None,
            atol=1e-2
            if name in ("div_floor", "remainder", "fmod")
            and dtype in (torch.float16, torch.bfloat16)
            else None,
        )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.float64])
def test_floor_division_keeps_the_sign_of_zero(dtype, device):
    """A zero quotient takes the sign of a / b, as PyTorch's (the kernel makes -0.0 from
    its bits: a literal -0.0 came out +0.0 under Triton 3.6)."""
    a = torch.tensor([0.0, -0.0, 0.0, -0.0, -1e-3, 1e-3, 3.0], dtype=dtype)
    b = torch.tensor([1.0, 1.0, -1.0, -1.0, -1e4, -1e4, 1.0], dtype=dtype)
    got = binary.div_floor(a.to(device), b.to(device)).cpu()
    ref = torch.div(a, b, rounding_mode="floor")
    assert torch.equal(got, ref), (got, ref)
    assert torch.equal(torch.signbit(got), torch.signbit(ref)), (got, ref)


@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.uint8])
def test_binary_int(dtype, device):
    a = randn((6, 9), dtype, device, 0 if dtype == torch.uint8 else -50, 50)
    b = randn((9,), dtype, device, 1, 7)
    if dtype != torch.uint8:
        b = b * torch.where(randn((9,), torch.bool, "cpu"), 1, -1).to(dtype).to(device)
    ac, bc = a.cpu(), b.cpu()
    for name, ref in [
        ("mul", torch.mul),
        ("maximum", torch.maximum),
        ("minimum", torch.minimum),
        ("bitwise_and", torch.bitwise_and),
        ("bitwise_or", torch.bitwise_or),
        ("bitwise_xor", torch.bitwise_xor),
        ("eq", torch.eq),
        ("lt", torch.lt),
        ("remainder", torch.remainder),
        ("fmod", torch.fmod),
        ("div_trunc", lambda x, y: torch.div(x, y, rounding_mode="trunc")),
        ("div_floor", lambda x, y: torch.div(x, y, rounding_mode="floor")),
    ]:
        assert_close(getattr(binary, name)(a, b), ref(ac, bc))
    assert_close(binary.div_true(a, b), torch.true_divide(ac, bc).double().float(), torch.float32)
    sh = randn((9,), dtype, device, 0, 5)
    assert_close(binary.lshift(a, sh), ac << sh.cpu())
    assert_close(binary.rshift(a, sh), ac >> sh.cpu())


def test_add_alpha_promotion_and_scalars(device):
    a = randn((4, 5), torch.float16, device)
    b = randn((5,), torch.float32, device)
    assert_close(binary.add(a, b, 0.5), to_ref(a) + 0.5 * to_ref(b), torch.float32)
    i = randn((4, 5), torch.int32, device)
    assert binary.add(i, 2.5, 1).dtype == torch.float32
    assert binary.add(i, torch.tensor(3, dtype=torch.int64), 2).dtype == torch.int32
    assert_close(binary.add(i, 3, -2), i.cpu() - 6)
    assert binary.add(a, torch.tensor(2.0, dtype=torch.float64), 1).dtype == torch.float16
    d = randn((8,), torch.float64, device)
    assert_close(binary.add(d, 0.1, 1), to_ref(d) + 0.1)  # float64 scalars keep precision


def test_iterator_convention_with_number_and_strides(device):
    out = torch.empty(6, 8, device=device).t()  # non-contiguous out
    a = randn((8, 6), torch.float32, device)
    b = randn((1, 6), torch.float32, device).expand(8, 6)
    KERNELS["add"]((out,), (a, b), torch.float32, 2)
    assert_close(out, to_ref(a) + 2 * to_ref(b), torch.float32)
    KERNELS["mul"]((out,), (a, 3.0), torch.float32)
    assert_close(out, to_ref(a) * 3, torch.float32)


def test_coalesce():
    assert coalesce([4, 5, 6], [[30, 6, 1], [0, 0, 1]]) == ([20, 6], [[6, 1], [0, 1]])
    assert coalesce([4, 1, 6], [[6, 99, 1]]) == ([24], [[1]])
    assert coalesce([1, 1], [[1, 1]]) == ([], [[]])


ACT = [
    ("silu", lambda x: F.silu(x), activation.silu.iter),
    ("hardsigmoid", F.hardsigmoid, activation.hardsigmoid.iter),
    ("hardswish", F.hardswish, activation.hardswish.iter),
    ("gelu_none", lambda x: F.gelu(x), lambda o, i, d: activation.gelu(o, i, d, 0)),
    (
        "gelu_tanh",
        lambda x: F.gelu(x, approximate="tanh"),
        lambda o, i, d: activation.gelu(o, i, d, 1),
    ),
    (
        "leaky_relu",
        lambda x: F.leaky_relu(x, 0.2),
        lambda o, i, d: activation.leaky_relu.iter(o, i, d, 0.2),
    ),
    ("elu", lambda x: F.elu(x, 1.5), lambda o, i, d: activation.elu.iter(o, i, d, 1.5, 1.0, 1.0)),
    (
        "softplus",
        lambda x: F.softplus(x, 2.0, 5.0),
        lambda o, i, d: activation.softplus.iter(o, i, d, 2.0, 5.0),
    ),
    (
        "threshold",
        lambda x: F.threshold(x, 0.1, 20.0),
        lambda o, i, d: activation.threshold.iter(o, (i[0], i[0]), d, 0.1, 20.0),
    ),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,ref_fn,kernel", ACT, ids=[a[0] for a in ACT])
def test_activation(name, ref_fn, kernel, dtype, device):
    x = randn((37, 29), dtype, device) * 3
    out = torch.empty_like(x)
    kernel((out,), (x,), dtype)
    assert_close(out, ref_fn(to_ref(x)).to(dtype), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_activation_backward(dtype, device):
    x = randn((300,), dtype, device) * 3
    g = randn((300,), dtype, device)
    xr = to_ref(x).requires_grad_()
    gr = to_ref(g)
    cases = [
        (
            "silu_backward",
            F.silu,
            lambda o: KERNELS["silu_backward"]((o,), (g, x), dtype),
        ),
        (
            "gelu_backward",
            F.gelu,
            lambda o: KERNELS["gelu_backward"]((o,), (g, x), dtype, 0),
        ),
        (
            "gelu_tanh_backward",
            lambda t: F.gelu(t, approximate="tanh"),
            lambda o: KERNELS["gelu_backward"]((o,), (g, x), dtype, 1),
        ),
        (
            "threshold_backward",
            F.relu,
            lambda o: KERNELS["threshold"]((o,), (x, g), dtype, 0, 0),
        ),
        (
            "leaky_relu_backward",
            lambda t: F.leaky_relu(t, 0.1),
            lambda o: KERNELS["leaky_relu_backward"]((o,), (x, g), dtype, 0.1),
        ),
        (
            "elu_backward",
            lambda t: F.elu(t, 0.7),
            lambda o: KERNELS["elu_backward"]((o,), (g, x), dtype, 0.7, 1.0, 1.0, False),
        ),
        (
            "hardtanh_backward",
            lambda t: F.hardtanh(t, -1.0, 2.0),
            lambda o: KERNELS["hardtanh_backward"]((o,), (g, x), dtype, -1.0, 2.0),
        ),
        (
            "hardswish_backward",
            F.hardswish,
            lambda o: KERNELS["hardswish_backward"]((o,), (g, x), dtype),
        ),
        (
            "softplus_backward",
            F.softplus,
            lambda o: KERNELS["softplus_backward"]((o,), (g, x), dtype, 1.0, 20.0),
        ),
    ]
    for name, fwd, run in cases:
        (ref,) = torch.autograd.grad(fwd(xr), xr, gr)
        out = torch.empty_like(x)
        run(out)
        assert_close(out, ref.to(dtype), dtype), name
    y = unary.sigmoid(x)
    out = torch.empty_like(x)
    KERNELS["sigmoid_backward"]((out,), (g, y), dtype)
    assert_close(out, (gr * (1 - to_ref(y)) * to_ref(y)).to(dtype), dtype)
    KERNELS["tanh_backward"]((out,), (g, y), dtype)
    assert_close(out, (gr * (1 - to_ref(y) ** 2)).to(dtype), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_ternary(dtype, device):
    a, b = randn((6, 7), dtype, device), randn((7,), dtype, device)
    w = randn((6, 1), dtype, device, 0, 1)
    ar, br, wr = to_ref(a), to_ref(b), to_ref(w)
    assert_close(ternary.lerp_tensor(a, b, w), torch.lerp(ar, br.expand(6, 7), wr).to(dtype), dtype)
    assert_close(
        ternary.lerp_scalar(a, b, 0.7), torch.lerp(ar, br.expand(6, 7), 0.7).to(dtype), dtype
    )
    assert_close(
        ternary.addcmul(a, b, w, 0.5), torch.addcmul(ar, br, wr, value=0.5).to(dtype), dtype
    )
    assert_close(
        ternary.addcdiv(a, b, (w.cpu() + 1).to(device), 0.5),
        torch.addcdiv(ar, br, wr + 1, value=0.5).to(dtype),
        dtype,
        atol=2e-2,
    )
    cond = (a.cpu() > 0).to(device)
    assert_close(ternary.where_fn(cond, a, b), torch.where(cond.cpu(), ar, br).to(dtype), dtype)
    assert ternary.where_fn(cond, a, 1).dtype == dtype
    lo, hi = randn((7,), dtype, device) - 1, randn((6, 1), dtype, device) + 1
    assert_close(ternary.clamp(a, lo, hi), torch.clamp(ar, to_ref(lo), to_ref(hi)).to(dtype), dtype)
    assert_close(ternary.clamp_scalar(a, -0.5, 0.5), torch.clamp(ar, -0.5, 0.5).to(dtype), dtype)
    assert_close(ternary.clamp_min_scalar(a, 0.1), torch.clamp(ar, min=0.1).to(dtype), dtype)
    assert_close(ternary.clamp_max_scalar(a, 0.1), torch.clamp(ar, max=0.1).to(dtype), dtype)


def test_pow(device):
    a = randn((50,), torch.float32, device, 0.1, 3)
    e = randn((50,), torch.float32, device, -2, 3)
    assert_close(ternary.pow_tensor_tensor(a, e), torch.pow(to_ref(a), to_ref(e)), torch.float32)
    for exp in (2, 3, 0.5, -0.5, -1, 1.7, -3):
        out = torch.empty_like(a)
        KERNELS["pow_tensor_scalar"]((out,), (a,), torch.float32, exp)
        assert_close(out, torch.pow(to_ref(a), exp), torch.float32)
    neg = randn((50,), torch.float32, device)
    out = torch.empty_like(neg)
    KERNELS["pow_tensor_scalar"]((out,), (neg,), torch.float32, 3.0)
    assert_close(out, torch.pow(to_ref(neg), 3.0), torch.float32)
    i = randn((40,), torch.int64, device, -4, 5)
    ie = randn((40,), torch.int64, device, 0, 9)
    assert_close(ternary.pow_tensor_tensor(i, ie), torch.pow(i.cpu(), ie.cpu()))


def test_nan_to_num_round_decimals(device):
    x = torch.tensor([math.nan, math.inf, -math.inf, 1.2345, -2.5]).to(device)
    out = torch.empty_like(x)
    KERNELS["nan_to_num"]((out,), (x,), x.dtype, None, None, None)
    assert_close(out, torch.nan_to_num(x.cpu()))
    KERNELS["nan_to_num"]((out,), (x,), x.dtype, 1.0, 2.0, -3.0)
    assert_close(out, torch.nan_to_num(x.cpu(), 1.0, 2.0, -3.0))
    y = torch.tensor([1.2345, -2.5, 0.125, 1234.5]).to(device)
    for d in (0, 2, -2):
        out = torch.empty_like(y)
        KERNELS["round_decimals"]((out,), (y,), y.dtype, d)
        assert_close(out, torch.round(y.cpu(), decimals=d))


@pytest.mark.parametrize(
    "src_dtype,dst_dtype",
    [
        (torch.float32, torch.float16),
        (torch.bfloat16, torch.float32),
        (torch.float32, torch.int32),
        (torch.int64, torch.float64),
        (torch.float32, torch.bool),
        (torch.bool, torch.float32),
        (torch.int32, torch.int8),
    ],
)
def test_copy_cast(src_dtype, dst_dtype, device):
    src = randn((13, 10), src_dtype, device)[::2, 1:]
    dst = torch.empty(9, 7, dtype=dst_dtype, device=device).t()
    KERNELS["copy"]((dst,), (src,), dst_dtype, False)
    assert_close(dst, src.cpu().to(dst_dtype))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16]
)
def test_fill(dtype, device):
    t = torch.empty(5, 9, dtype=dtype, device=device)[:, ::2]
    value = {torch.bool: True, torch.int64: 2**40 + 3}.get(dtype, 0.1)
    copy.fill_(t, value)
    assert_close(t, torch.full(t.shape, value, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_clamp_both_bounds_and_nan(dtype, device):
    # float64 with two Python-number bounds failed in Triton's interpreter (`|` of
    # 0-d values); NaN in the input or in either bound gives NaN, as torch does.
    x = torch.tensor([-2.0, -0.05, 0.05, 2.0, float("nan")], dtype=dtype)
    for lo, hi in ((-0.1, 0.1), (-1, 1), (float("nan"), 1.0), (0.5, -0.5)):
        got = ternary.clamp_scalar(x.to(device), lo, hi)
        torch.testing.assert_close(got.cpu(), x.clamp(lo, hi), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_transposing_copies_take_the_tile_kernel(monkeypatch, dtype):
    """The copy kernel from an NCHW tensor to a channels_last one and from a transposed
    matrix to a contiguous one (input along rows, output along columns: what the cuda
    driver's .contiguous() runs) takes the tile kernel, at sizes that leave partial
    tiles, and so does a binary op writing a contiguous out= from a transposed input;
    a plain strided copy keeps the flat kernel."""
    from torch_ext.ops import _pointwise

    kinds = []
    real = _pointwise.Pointwise._kernel

    def spy(self, in_kinds, cdt, num_extra, rank, contig, idx64):
        kinds.append(contig)
        return real(self, in_kinds, cdt, num_extra, rank, contig, idx64)

    monkeypatch.setattr(_pointwise.Pointwise, "_kernel", spy)
    dev = "privateuseone"
    x = (torch.randn(3, 40, 7, 9) * 10).to(dtype)
    xd = x.to(dev)
    got = torch.empty_like(xd, memory_format=torch.channels_last)
    # dims in the output's memory order, as the C++ iterator path hands them over
    copy.copy_kernel((got.permute(0, 2, 3, 1),), (xd.permute(0, 2, 3, 1),))
    assert torch.equal(got.cpu(), x) and got.is_contiguous(memory_format=torch.channels_last)
    m = x.reshape(120, 63)
    got = torch.empty(63, 120, dtype=dtype, device=dev)
    copy.copy_kernel((got,), (xd.reshape(120, 63).t(),))
    assert torch.equal(got.cpu(), m.t())
    if dtype.is_floating_point:  # two inputs, one transposed, and a scalar
        y = torch.randn(63, 120).to(dtype)
        out = torch.empty(63, 120, dtype=dtype, device=dev)
        torch.add(xd.reshape(120, 63).t(), y.to(dev), alpha=2, out=out)
        ref = torch.add(m.t().double(), y.double(), alpha=2)
        assert torch.allclose(out.cpu().double(), ref, rtol=1e-2, atol=1e-2)
    assert kinds and set(kinds) == {"tile"}, kinds
    kinds.clear()
    got = torch.empty(3, 20, 7, 9, dtype=dtype, device=dev)
    copy.copy_kernel((got,), (xd[:, ::2],))  # strided, not transposing
    assert kinds == [False] and torch.equal(got.cpu(), x[:, ::2])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_gelu_16bit_erf_tails(dtype, device, monkeypatch):
    """16-bit gelu (and its backward) take the erfc-based kernel, the tanh form x
    sigmoid(2u): within 1.5 roundings of float64 gelu down to x = -4.2 (relative), where
    1 + erf or 1 + tanh would cancel; the flat kernel's driver tile (spec pointwise_tile)
    at a small size."""
    from helpers import force_spec
    from torch_ext.ops import _pointwise

    used = []
    for name in ("gelu_none_16", "gelu_none_backward_16", "gelu_tanh_16", "gelu_tanh_backward_16"):
        op = getattr(activation, name)
        monkeypatch.setattr(
            op, "iter", lambda *a, _f=op.iter, _n=name: (used.append(_n), _f(*a))[1]
        )
    force_spec(monkeypatch, _pointwise, pointwise_tile=(64, 2))
    x = torch.linspace(-4.2, 6, 3001).to(dtype)
    g = torch.linspace(-1, 1, 3001).to(dtype)
    ref = F.gelu(x.double())
    ref_grad = torch.ops.aten.gelu_backward(g.double(), x.double())
    y = torch.empty(x.shape, dtype=dtype, device=device)
    KERNELS["gelu"]((y,), (x.to(device),), dtype, "none")
    dx = torch.empty(x.shape, dtype=dtype, device=device)
    KERNELS["gelu_backward"]((dx,), (g.to(device), x.to(device)), dtype, "none")
    ulp = torch.finfo(dtype).eps
    rel = ((y.cpu().double() - ref).abs() / ref.abs().clamp_min(1e-30)).max().item()
    assert rel <= 1.5 * ulp, rel
    assert_close(dx, ref_grad.to(dtype), dtype)
    # tanh: x sigmoid(2u), no cancellation either
    ref = F.gelu(x.double(), approximate="tanh")
    KERNELS["gelu"]((y,), (x.to(device),), dtype, "tanh")
    rel = ((y.cpu().double() - ref).abs() / ref.abs().clamp_min(1e-30)).max().item()
    assert rel <= 1.5 * ulp, rel
    KERNELS["gelu_backward"]((dx,), (g.to(device), x.to(device)), dtype, "tanh")
    ref_grad = torch.ops.aten.gelu_backward(g.double(), x.double(), approximate="tanh")
    assert_close(dx, ref_grad.to(dtype), dtype)
    assert used == [
        "gelu_none_16", "gelu_none_backward_16", "gelu_tanh_16", "gelu_tanh_backward_16"
    ], used  # fmt: skip
