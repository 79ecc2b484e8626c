"""Kernel-level tests of the torch.special Bessel functions (torch_ext/ops/special_bessel.py),
the orthogonal polynomials (polynomial.py), igamma/igammac (special_gamma.py) and frexp
(unary.py). Bessel in float64 against mpmath (PyTorch's own float64 J0/J1/Y1 are off by up
to 5e-7 near x = 5, so they are no reference there), edges as PyTorch gives them."""

import math

import mpmath
import pytest
import torch

from torch_ext.ops import special_bessel as B
from torch_ext.ops import polynomial as P
from torch_ext.ops import special_gamma as G
from torch_ext.ops import unary

from helpers import assert_kernel_close as assert_close

POINTS = [1e-6, 0.03, 0.5, 1.0, 2.4, 3.9, 5.01, 5.61, 8.5, 9.5, 11.9, 12.1, 17.0, 30.0, 80.0]
MP = {
    "special_bessel_j0": lambda x: mpmath.besselj(0, x),
    "special_bessel_j1": lambda x: mpmath.besselj(1, x),
    "special_bessel_y0": lambda x: mpmath.bessely(0, x),
    "special_bessel_y1": lambda x: mpmath.bessely(1, x),
    "special_modified_bessel_i0": lambda x: mpmath.besseli(0, x),
    "special_modified_bessel_i1": lambda x: mpmath.besseli(1, x),
    "special_modified_bessel_k0": lambda x: mpmath.besselk(0, x),
    "special_modified_bessel_k1": lambda x: mpmath.besselk(1, x),
    "special_scaled_modified_bessel_k0": lambda x: mpmath.exp(x) * mpmath.besselk(0, x),
    "special_scaled_modified_bessel_k1": lambda x: mpmath.exp(x) * mpmath.besselk(1, x),
    "special_spherical_bessel_j0": lambda x: mpmath.sin(x) / x,
}


@pytest.mark.parametrize("name", MP)
def test_bessel_against_mpmath(name, device):
    xs = POINTS + [-p for p in POINTS if "_y" not in name and "_k" not in name]
    x = torch.tensor(xs, dtype=torch.float64)
    ref = torch.tensor([float(MP[name](mpmath.mpf(v))) for v in xs], dtype=torch.float64)
    res = getattr(B, name)(x.to(device)).cpu()
    # absolute near the zeros of J and Y, relative elsewhere
    torch.testing.assert_close(res, ref, rtol=2e-8, atol=1e-12)


@pytest.mark.parametrize("name", MP)
def test_bessel_edges_and_float32(name, device):
    edges = torch.tensor([0.0, -1.0, math.inf, -math.inf, math.nan], dtype=torch.float32)
    res = getattr(B, name)(edges.to(device)).cpu()
    ref = getattr(torch.special, name[len("special_") :])(edges)
    torch.testing.assert_close(res, ref, equal_nan=True)
    x = torch.linspace(0.05, 40, 500, dtype=torch.float32)
    ref = getattr(torch.special, name[len("special_") :])(x.double()).float()
    assert_close(getattr(B, name)(x.to(device)), ref, torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_frexp(dtype, device):
    tiny = torch.finfo(dtype).tiny
    # (bf16 subnormals: Triton's interpreter loads them as 0; float32's cover the path)
    sub = [] if dtype == torch.bfloat16 else [tiny / 8, -tiny / 4]
    x = torch.tensor(
        [0.0, -0.0, 1.0, -3.5, 0.75, 1024.0, tiny, 1e-3, math.inf, -math.inf] + sub,
        dtype=torch.float64,
    ).to(dtype)
    x = torch.cat(
        [x, (torch.randn(200, dtype=torch.float64) * 1e3).to(dtype), x.new_tensor([math.nan])]
    )
    m, e = (
        torch.empty_like(x, device=device),
        torch.empty(x.shape, dtype=torch.int32, device=device),
    )
    unary._frexp.iter((m, e), (x.to(device),), dtype)
    rm, re = torch.frexp(x)
    torch.testing.assert_close(m.cpu(), rm, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(e.cpu(), re)
    assert torch.equal(torch.signbit(m.cpu()), torch.signbit(rm))


POLYNOMIALS = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials(name, device):
    """Against PyTorch's float64 (degrees -2..13, both sides of the trigonometric
    switch at n = 8, x = +-1, 0 and 0.5 exactly), and with n a Python number."""
    g = torch.Generator().manual_seed(0)
    x = torch.cat(
        [torch.empty(300).uniform_(-2, 2, generator=g), torch.tensor([1.0, -1, 0, 0.5] * 4)]
    )
    n = torch.cat(
        [torch.randint(-2, 14, (300,), generator=g), torch.tensor([0, 1, 2, 3, 5, 9, 12, 20] * 2)]
    )
    x, n = x.double(), n.double()
    op = getattr(P, name)
    ref = getattr(torch.special, name)(x, n)
    torch.testing.assert_close(op(x.to(device), n.to(device)).cpu(), ref, rtol=1e-9, atol=1e-9)
    xf = x.float()
    ref = getattr(torch.special, name)(xf.double(), 4.0).float()
    assert_close(op(xf.to(device), 4.0), ref, torch.float32)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma(name, device):
    """Against PyTorch's float64 on both sides of x = a + 1 (series / continued
    fraction) and at the edges (0, inf, negative, nan)."""
    g = torch.Generator().manual_seed(0)
    a = torch.cat([torch.empty(200).uniform_(0, 12, generator=g), torch.tensor([50.0, 0.01, 0.5])])
    x = torch.cat([torch.empty(200).uniform_(0, 15, generator=g), torch.tensor([55.0, 0.02, 30.0])])
    a, x = a.double(), x.double()
    op = getattr(G, name)
    ref = getattr(torch, name)(a, x)
    torch.testing.assert_close(op(a.to(device), x.to(device)).cpu(), ref, rtol=1e-8, atol=1e-12)
    inf, nan = math.inf, math.nan
    ea = torch.tensor([0.0, 0.0, 1.0, inf, inf, 2.0, -1.0, 3.0, nan, 1.0])
    ex = torch.tensor([1.0, 0.0, 0.0, 1.0, inf, inf, 1.0, -1.0, 1.0, nan])
    res = op(ea.to(device), ex.to(device)).cpu()
    torch.testing.assert_close(res, getattr(torch, name)(ea, ex), equal_nan=True)
