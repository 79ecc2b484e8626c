"""Complex tensors on privateuseone against the CPU (ops/complex.py): add, sub, mul and
div of complex operands (broadcast, scalars, alpha, in place, real and conjugated
operands, strided views), neg, exp, log, sqrt, abs (and its gradient), sgn, reciprocal,
sum, mean and cat, polar and
complex, a rotary embedding written with complex numbers forward and backward, replayed
launch plans at other sizes, and the error an op without complex kernels raises."""

import pytest

import torch

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV

C64, C128 = torch.complex64, torch.complex128


def dev(x):
    return x.to(DEV)


def close(got, ref, tol=1e-6):
    assert got.device.type == "privateuseone" and got.dtype == ref.dtype, (got.dtype, ref.dtype)
    torch.testing.assert_close(got.cpu(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_arithmetic(dtype):
    torch.manual_seed(1)
    a = torch.randn(5, 6, dtype=dtype)
    b = torch.randn(6, dtype=dtype)
    r = torch.randn(5, 1, dtype=torch.float64 if dtype == C128 else torch.float32)
    close(dev(a) * dev(b), a * b)
    close(dev(a) + dev(b), a + b)
    close(dev(a) - dev(b), a - b)
    close(torch.add(dev(a), dev(b), alpha=2 - 3j), torch.add(a, b, alpha=2 - 3j))
    close(torch.sub(dev(a), dev(b), alpha=0.5), torch.sub(a, b, alpha=0.5))
    close(dev(a) * (1.5 - 2j), a * (1.5 - 2j))
    close(dev(a) * dev(r), a * r)  # a real operand promoted
    close(dev(r) + dev(a), r + a)
    close(dev(a) * dev(b).conj(), a * b.conj())  # the conjugate bit resolved
    close(dev(a).t() * dev(a).t(), a.t() * a.t())  # strided parts
    x = dev(a)
    x.mul_(dev(b)).add_(dev(b), alpha=1j)
    close(x, (a * b).add_(b, alpha=1j))


def test_mixed_precision_and_out():
    """complex64 with complex128 promotes; out= of another complex type is cast on store;
    a real out= of a complex result is refused, as on the CPU."""
    a, b = torch.randn(4, dtype=C64), torch.randn(4, dtype=C128)
    close(dev(a) * dev(b), a * b, tol=1e-6)
    out = dev(torch.empty(4, dtype=C128))
    torch.mul(dev(a), dev(a), out=out)
    close(out, (a * a).to(C128))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Float"):
        torch.mul(dev(a), dev(a), out=dev(torch.empty(4)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_polar_and_complex(dtype):
    torch.manual_seed(2)
    r, t = torch.rand(3, 1, 5, dtype=dtype), torch.randn(4, 5, dtype=dtype) * 4
    close(torch.polar(dev(r), dev(t)), torch.polar(r, t), tol=1e-6)
    close(torch.complex(dev(r), dev(t)), torch.complex(r, t))
    out = dev(torch.empty(0, dtype=C64 if dtype == torch.float32 else C128))
    torch.polar(dev(r), dev(t), out=out)
    close(out, torch.polar(r, t), tol=1e-6)


def test_polar_and_complex_errors():
    f, d = torch.ones(3), torch.ones(3, dtype=torch.float64)
    for fn in (torch.polar, torch.complex):
        with pytest.raises(RuntimeError, match="scalar type Float but got scalar type Double"):
            fn(dev(f), dev(d))
        with pytest.raises(RuntimeError, match="Half, Float or Double tensors but got Long"):
            fn(dev(f.long()), dev(f.long()))
        with pytest.raises(RuntimeError, match="ComplexFloat but got scalar type Float"):
            fn(dev(f), dev(f), out=dev(torch.empty(3)))
        with pytest.raises(NotImplementedError, match="complex32"):
            fn(dev(f.half()), dev(f.half()))


def _rope(x, freqs_cis):
    """A rotary embedding as Meta's Llama writes it (view_as_complex, a broadcast
    complex product, view_as_real)."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    f = freqs_cis.view(1, xc.shape[1], 1, xc.shape[-1])
    return torch.view_as_real(xc * f).flatten(3).type_as(x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rotary_embedding_forward_and_backward(dtype):
    torch.manual_seed(3)
    B, T, H, D = 2, 7, 3, 8
    inv = 1.0 / (10000 ** (torch.arange(0, D, 2).float() / D))
    angles = torch.outer(torch.arange(T).float(), inv)
    freqs = torch.polar(torch.ones_like(angles), angles)
    freqs_dev = torch.polar(torch.ones_like(dev(angles)), dev(angles))
    close(freqs_dev, freqs, tol=1e-6)
    x = torch.randn(B, T, H, D, dtype=dtype, requires_grad=True)
    xd = dev(x.detach()).requires_grad_(True)
    y, yd = _rope(x, freqs), _rope(xd, freqs_dev)
    tol = 1e-6 if dtype == torch.float32 else 1e-2
    close(yd, y.detach(), tol=tol)
    g = torch.randn_like(y)
    y.backward(g)
    yd.backward(dev(g))
    close(xd.grad, x.grad, tol=tol)


def test_replayed_plans_at_other_sizes():
    """The parts are views made in Python: a launch plan recorded for one size must not
    serve another with that size's strides (each call checked against the CPU)."""
    torch.manual_seed(4)
    for n in (3, 5, 3, 5, 9, 3):
        a, b = torch.randn(n, 4, dtype=C64), torch.randn(4, dtype=C64)
        close(dev(a) * dev(b), a * b)
        close(dev(a) + dev(b), a + b)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_unary_and_division(dtype):
    """neg, exp, abs (a real result), reciprocal and division (Smith's scaling: no
    overflow where |b|**2 would overflow) against the CPU."""
    torch.manual_seed(5)
    a, b = torch.randn(6, 5, dtype=dtype), torch.randn(5, dtype=dtype)
    close(-dev(a), -a)
    close(dev(a).exp(), a.exp(), tol=1e-5)
    close(dev(a).abs(), a.abs(), tol=1e-6)
    close(dev(a).reciprocal(), a.reciprocal(), tol=1e-5)
    close(dev(a) / dev(b), a / b, tol=1e-5)
    close(dev(a) / 2.5j, a / 2.5j, tol=1e-6)
    big = torch.tensor([3e30 + 4e30j, 1e-30 - 2e-30j], dtype=dtype)
    close(dev(big).abs(), big.abs(), tol=1e-6)
    close(dev(a[0, :2]) / dev(big), a[0, :2] / big, tol=1e-5)
    z = torch.tensor([1 + 1j, 0j], dtype=dtype)
    zero = torch.zeros(2, dtype=dtype)
    torch.testing.assert_close((dev(z) / dev(zero)).cpu(), z / zero, equal_nan=True)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_sum_mean_and_cat(dtype):
    torch.manual_seed(6)
    a = torch.randn(4, 3, 5, dtype=dtype)
    close(dev(a).sum(), a.sum(), tol=1e-5)
    close(dev(a).sum(1), a.sum(1), tol=1e-5)
    close(dev(a).sum((0, 2), keepdim=True), a.sum((0, 2), keepdim=True), tol=1e-5)
    close(dev(a).mean(-1), a.mean(-1), tol=1e-5)
    close(dev(a).conj().sum(0), a.conj().sum(0), tol=1e-5)
    close(dev(a[0, 0, 0]).sum(), a[0, 0, 0].sum())
    b = torch.randn(4, 2, 5, dtype=dtype)
    close(torch.cat([dev(a), dev(b)], 1), torch.cat([a, b], 1))
    close(torch.cat([dev(a), dev(a.conj())], -1), torch.cat([a, a.conj()], -1))
    r = torch.randn(4, 1, 5, dtype=torch.float64 if dtype == C128 else torch.float32)
    close(torch.cat([dev(a), dev(r)], 1), torch.cat([a, r], 1))


def test_broadcast_product_backward_reduces_to_the_broadcast_operand():
    """The gradient of a broadcast operand (a learnable complex frequency) is the sum of
    the product's gradient over the broadcast dims: a complex sum on the device."""
    torch.manual_seed(7)
    x = torch.randn(3, 4, dtype=C64)
    f = torch.randn(4, dtype=C64, requires_grad=True)
    fd = dev(f.detach()).requires_grad_(True)
    g = torch.randn(3, 4, dtype=C64)
    (x * f).backward(g)
    (dev(x) * fd).backward(dev(g))
    close(fd.grad, f.grad, tol=1e-5)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_log_sqrt_sgn_and_abs_gradient(dtype):
    """log (principal branch, atan2 of the parts), sqrt (principal root, no cancellation on
    the negative real axis), sgn (z / |z|, 0 at 0), and abs's gradient through sgn."""
    torch.manual_seed(8)
    a = torch.randn(7, 6, dtype=dtype)
    a[0, 0] = -4 + 1e-3j  # near the negative real axis
    a[0, 1] = 0
    close(dev(a[1:]).log(), a[1:].log(), tol=1e-5)
    close(dev(a).sqrt(), a.sqrt(), tol=1e-5)
    close(dev(a).sgn(), a.sgn(), tol=1e-6)
    x = a.clone().requires_grad_(True)
    xd = dev(a).requires_grad_(True)
    x.abs().sum().backward()
    xd.abs().sum().backward()
    close(xd.grad, x.grad, tol=1e-6)


def test_ops_without_complex_kernels_name_the_dtype():
    with pytest.raises(NotImplementedError, match="complex64"):
        dev(torch.ones(2, dtype=C64)).atan()
    with pytest.raises(NotImplementedError, match="complex64"):
        torch.prod(dev(torch.ones(2, 2, dtype=C64)))


@pytest.mark.parametrize("dtype", [C64, C128])
def test_trigonometric_and_hyperbolic(dtype):
    """sin, cos, sinh, cosh and tanh of complex tensors, small parts (no cancellation in
    sinh near 0), large real parts (tanh past 20: no overflow), and their gradients (a
    product with a conjugate; tanh's through tanh_backward)."""
    torch.manual_seed(3)
    z = torch.complex(torch.randn(64) * 3, torch.randn(64) * 3).to(dtype)
    z = torch.cat([z, torch.tensor([1e-5 + 1e-6j, -2e-7 + 3e-4j, 30 + 1j, -45 - 2j], dtype=dtype)])
    tol = 1e-5 if dtype == C64 else 1e-10
    for fn in (torch.sin, torch.cos, torch.sinh, torch.cosh):
        close(fn(dev(z[:64])), fn(z[:64]), tol=tol)
        # relative to each value near zero, not to the largest
        small, got = fn(z[64:66]), fn(dev(z[64:66])).cpu()
        assert ((got - small).abs() <= tol * small.abs() + 1e-30).all(), (fn, got, small)
    close(torch.tanh(dev(z)), torch.tanh(z), tol=tol)
    for fn in (torch.sin, torch.tanh):
        x = z[:64].clone().requires_grad_()
        xd = dev(z[:64]).requires_grad_()
        g = torch.randn(64, dtype=dtype)
        fn(x).backward(g)
        fn(xd).backward(dev(g))
        close(xd.grad, x.grad, tol=tol * 10)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_matrix_products(dtype):
    """mm, bmm, matmul, addmm, baddbmm and linear of complex matrices (four real
    products of the parts): transposed and conjugated operands, batches, out=, complex
    alpha and beta, and the gradient (products with conjugates)."""
    torch.manual_seed(4)
    a, b = torch.randn(5, 7, dtype=dtype), torch.randn(7, 3, dtype=dtype)
    A, B = torch.randn(2, 5, 7, dtype=dtype), torch.randn(2, 7, 3, dtype=dtype)
    tol = 1e-5 if dtype == C64 else 1e-12
    close(dev(a) @ dev(b), a @ b, tol=tol)
    close(dev(a).conj() @ dev(b.t().contiguous()).t(), a.conj() @ b, tol=tol)
    close(dev(a).mH @ dev(a), a.mH @ a, tol=tol)
    close(torch.bmm(dev(A), dev(B)), torch.bmm(A, B), tol=tol)
    close(dev(A) @ dev(b), A @ b, tol=tol)
    out = dev(torch.empty(5, 3, dtype=dtype))
    torch.mm(dev(a), dev(b), out=out)
    close(out, a @ b, tol=tol)
    bias = torch.randn(3, dtype=dtype)
    close(torch.addmm(dev(bias), dev(a), dev(b)), torch.addmm(bias, a, b), tol=tol)
    k = dict(beta=0.5 - 1j, alpha=2j)
    close(torch.addmm(dev(bias), dev(a), dev(b), **k), torch.addmm(bias, a, b, **k), tol=tol)
    nan = torch.full((5, 3), complex("nan+nanj"), dtype=dtype)  # beta 0 ignores the bias
    close(torch.addmm(dev(nan), dev(a), dev(b), beta=0), a @ b, tol=tol)
    C = torch.randn(2, 5, 3, dtype=dtype)
    close(torch.baddbmm(dev(C), dev(A), dev(B), **k), torch.baddbmm(C, A, B, **k), tol=tol)
    lin = torch.nn.Linear(7, 3, dtype=dtype)
    close(lin.to(DEV)(dev(A)), lin.cpu()(A), tol=tol)  # linear: addmm / matmul
    x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
    xd, yd = dev(a).requires_grad_(), dev(b).requires_grad_()
    g = torch.randn(5, 3, dtype=dtype)
    (x @ y).backward(g)
    (xd @ yd).backward(dev(g))
    close(xd.grad, x.grad, tol=tol)
    close(yd.grad, y.grad, tol=tol)
