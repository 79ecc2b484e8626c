"""Issue 3's examples on the device, against CPU, with the fallback an error
(tests/conftest.py): lerp (Legacy, YAML only), tril (LegacyMeta, YAML only),
triu (LegacyMeta, hand-written C++ body), add/sub/mul/div (Legacy stubs)."""

import pytest
import torch

import torch_ext  # noqa: F401  registers the device

from helpers import DEV

FLOATS = [torch.float32, torch.float16, torch.bfloat16]
SHAPES = [(), (0,), (7,), (3, 5), (4, 1, 6), (257, 33)]


def tol(dtype):
    return {
        torch.float16: dict(atol=1e-3, rtol=1e-3),
        torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2),
    }.get(dtype, dict(atol=1e-5, rtol=1.3e-6))


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    return torch.randint(-20, 20, shape, generator=g).to(dtype)


def ref(fn, *args, dtype=None, **kw):
    """fn on float64 copies of the inputs, cast back to the result dtype."""
    up = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    out = fn(*up, **kw)
    return out.to(dtype) if dtype is not None else out


def check(actual, expected, dtype=None):
    assert actual.device.type == DEV
    torch.testing.assert_close(
        actual.cpu(), expected, **tol(dtype or expected.dtype), equal_nan=True
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_lerp_scalar_functional_inplace_out(shape, dtype):
    a, b = make(shape, dtype, 1), make(shape, dtype, 2)
    expected = ref(torch.lerp, a, b, 0.3, dtype=dtype)
    da, db = a.to(DEV), b.to(DEV)
    check(torch.lerp(da, db, 0.3), expected, dtype)
    out = torch.empty(0, dtype=dtype, device=DEV)
    torch.lerp(da, db, 0.3, out=out)
    check(out, expected, dtype)
    da.lerp_(db, 0.3)
    check(da, expected, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_lerp_tensor_weight_broadcast_and_strided(dtype):
    a = make((6, 8), dtype, 1)
    b = make((8,), dtype, 2)
    w = make((6, 1), dtype, 3).sigmoid()
    expected = ref(torch.lerp, a.t().contiguous().t(), b, w, dtype=dtype)
    da = a.to(DEV).t().contiguous().t()  # column-major
    check(torch.lerp(da, b.to(DEV), w.to(DEV)), expected, dtype)
    out = torch.empty(6, 8, dtype=dtype, device=DEV)
    torch.lerp(da, b.to(DEV), w.to(DEV), out=out)
    check(out, expected, dtype)
    x = a.to(DEV)
    x.lerp_(b.to(DEV), w.to(DEV))
    check(x, expected, dtype)


@pytest.mark.parametrize("op", [torch.tril, torch.triu])
@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.bool])
@pytest.mark.parametrize(
    "shape,k",
    [
        ((5, 7), 0),
        ((5, 7), -2),
        ((7, 5), 3),
        ((2, 3, 4, 4), 1),
        ((0, 3), 0),
        ((3, 0), 0),
        ((64, 130), -40),
    ],
)
def test_tril_triu(op, dtype, shape, k):
    x = make(shape, dtype) if dtype != torch.bool else make(shape, torch.int32) > 0
    d = x.to(DEV)
    check(op(d, k), op(x, k))
    check(op(d.transpose(-1, -2), k), op(x.transpose(-1, -2), k))
    out = torch.empty(0, dtype=dtype, device=DEV)
    op(d, k, out=out)
    check(out, op(x, k))
    inplace = getattr(d.clone(), op.__name__ + "_")(k)
    check(inplace, op(x, k))


def test_tril_requires_a_matrix():
    with pytest.raises(RuntimeError, match="2"):
        torch.tril(torch.ones(3, device=DEV))


BINARY = [torch.add, torch.sub, torch.mul, torch.div]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "sa,sb",
    [
        ((), ()),
        ((0,), (0,)),
        ((17,), (17,)),
        ((4, 1, 5), (3, 1)),
        ((1,), (9, 9)),
        ((301, 7), (301, 7)),
    ],
)
def test_binary_float(op, dtype, sa, sb):
    a, b = make(sa, dtype, 1), make(sb, dtype, 2)
    if op is torch.div:
        b = b.abs() + 0.5
    check(op(a.to(DEV), b.to(DEV)), ref(op, a, b, dtype=dtype), dtype)


@pytest.mark.parametrize("op", [torch.add, torch.sub])
@pytest.mark.parametrize("alpha", [2, -0.5])
def test_alpha(op, alpha):
    a, b = make((5, 6), torch.float32, 1), make((5, 6), torch.float32, 2)
    check(op(a.to(DEV), b.to(DEV), alpha=alpha), op(a, b, alpha=alpha))
    check(op(a.to(DEV), 3.0, alpha=alpha), op(a, 3.0, alpha=alpha))


@pytest.mark.parametrize("op", [torch.add, torch.sub, torch.mul])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.int8])
def test_binary_int(op, dtype):
    a, b = make((33,), dtype, 1), make((33,), dtype, 2)
    if dtype == torch.uint8:
        a, b = a.abs(), b.abs()
    check(op(a.to(DEV), b.to(DEV)), op(a, b))


@pytest.mark.parametrize("rounding_mode", [None, "trunc", "floor"])
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64]
)
def test_div_rounding_modes(rounding_mode, dtype):
    a = make((40,), dtype, 1) * 3
    b = make((40,), dtype, 2)
    b = torch.where(b == 0, torch.ones_like(b), b)
    if not dtype.is_floating_point and rounding_mode is None:
        expected = torch.div(a, b)  # true division promotes to float
    else:
        expected = ref(torch.div, a, b, rounding_mode=rounding_mode, dtype=dtype)
    actual = torch.div(a.to(DEV), b.to(DEV), rounding_mode=rounding_mode)
    check(actual, expected, expected.dtype)
    out = torch.empty(0, dtype=expected.dtype, device=DEV)
    torch.div(a.to(DEV), b.to(DEV), rounding_mode=rounding_mode, out=out)
    check(out, expected, expected.dtype)


def test_type_promotion():
    i = torch.arange(10, dtype=torch.int32)
    f = torch.linspace(-1, 1, 10, dtype=torch.float16)
    r = torch.add(i.to(DEV), f.to(DEV))
    assert r.dtype == torch.float16
    check(r, i + f)
    r = torch.mul(i.to(DEV), 2.5)
    assert r.dtype == torch.float32
    check(r, i * 2.5)
    b = torch.tensor([True, False] * 5)
    check(b.to(DEV) + i.to(DEV), b + i)
    # int / int is true division
    check(torch.div(i.to(DEV), 4), torch.div(i, 4))


def test_cpu_scalar_tensor_operand():
    a = make((4, 4), torch.float32)
    s = torch.tensor(2.5)  # 0-dim CPU tensor: allowed beside device tensors
    for op in BINARY:
        check(op(a.to(DEV), s), op(a, s))
        check(op(s, a.to(DEV)), op(s, a))


def test_non_contiguous_and_out():
    a = make((8, 10), torch.float32, 1)
    b = make((10, 8), torch.float32, 2)
    da, db = a.to(DEV), b.to(DEV)
    check(da + db.t(), a + b.t())
    check(da[:, ::3] * db.t()[:, ::3], a[:, ::3] * b.t()[:, ::3])
    out = torch.empty(10, 8, device=DEV).t()  # non-contiguous out
    torch.add(da, db.t(), out=out)
    check(out, a + b.t())
    out2 = torch.empty(3, device=DEV)  # wrong size: resized
    torch.mul(da, 2, out=out2)
    check(out2, a * 2)
    x = da.clone()
    x[1:5].add_(db.t()[1:5], alpha=2)
    y = a.clone()
    y[1:5].add_(b.t()[1:5], alpha=2)
    check(x, y)


def test_out_dtype_mismatch_is_an_error():
    a = torch.ones(3, device=DEV)
    with pytest.raises(RuntimeError):
        torch.add(a, a, out=torch.empty(3, dtype=torch.int32, device=DEV))


def test_inplace_broadcast_error():
    a = torch.ones(3, device=DEV)
    with pytest.raises(RuntimeError):
        a.add_(torch.ones(2, 3, device=DEV))
