"""ops/random_sampling.py: gamma, Dirichlet, Poisson and binomial samples on the device
(no CPU fallback: a random op may not take it) have their distributions' moments, repeat
under manual_seed, and keep torch's edge values; torch.distributions samples with them."""

import pytest
import torch


DEVICE = "privateuseone"
N = 4000


def _moments(x, mean, var, kurtosis):
    """The sample mean and variance within 5 standard errors of the distribution's
    (`kurtosis`: its excess kurtosis, which the variance's error grows with)."""
    x = x.double().cpu()
    n = x.numel()
    assert abs(x.mean().item() - mean) < 5 * (var / n) ** 0.5, (x.mean().item(), mean)
    tol = 5 * var * ((2 + kurtosis) / n) ** 0.5
    assert abs(x.var().item() - var) < tol, (x.var().item(), var)


@pytest.mark.parametrize("alpha", [0.2, 1.0, 3.5, 40.0])
def test_gamma_moments(alpha):
    torch.manual_seed(0)
    g = torch._standard_gamma(torch.full((N,), alpha, device=DEVICE))
    assert g.dtype == torch.float32 and bool((g > 0).all())
    _moments(g, alpha, alpha, 6 / alpha)


@pytest.mark.parametrize("rate", [0.3, 4.0, 9.5, 12.0, 250.0])
def test_poisson_moments(rate):
    torch.manual_seed(1)
    k = torch.poisson(torch.full((N,), rate, device=DEVICE))
    assert torch.equal(k, k.floor()) and bool((k >= 0).all())
    _moments(k, rate, rate, 1 / rate)


@pytest.mark.parametrize("n,p", [(6, 0.3), (80, 0.05), (100, 0.5), (400, 0.93)])
def test_binomial_moments(n, p):
    torch.manual_seed(2)
    k = torch.binomial(
        torch.full((N,), float(n), device=DEVICE), torch.full((N,), p, device=DEVICE)
    )
    assert torch.equal(k, k.floor()) and bool((k >= 0).all()) and bool((k <= n).all())
    npq = n * p * (1 - p)
    _moments(k, n * p, npq, (1 - 6 * p * (1 - p)) / npq)


def test_dirichlet_and_distributions():
    torch.manual_seed(3)
    alpha = torch.tensor([0.5, 1.0, 2.5])
    d = torch._sample_dirichlet(alpha.to(DEVICE).expand(N, 3).contiguous())
    torch.testing.assert_close(d.sum(1).cpu(), torch.ones(N), atol=1e-5, rtol=0)
    torch.testing.assert_close(d.mean(0).cpu(), alpha / alpha.sum(), atol=0.02, rtol=0)
    dists = torch.distributions
    a, b = torch.full((N,), 2.0, device=DEVICE), torch.full((N,), 5.0, device=DEVICE)
    _moments(dists.Beta(a, b).sample(), 2 / 7, 2 * 5 / (49 * 8), -0.12)
    _moments(dists.Gamma(a, b).sample(), 0.4, 0.08, 3.0)
    _moments(dists.Chi2(a).sample(), 2.0, 4.0, 6.0)
    assert dists.Dirichlet(alpha.to(DEVICE)).sample((5,)).shape == (5, 3)


def test_reproducible_under_manual_seed_and_fresh_per_call():
    def draw():
        rate = torch.full((64,), 20.0, device=DEVICE)
        return torch._standard_gamma(rate), torch.poisson(rate), torch.binomial(rate, rate / 40)

    torch.manual_seed(7)
    first, second = draw(), draw()
    torch.manual_seed(7)
    again = draw()
    for x, y, z in zip(first, second, again):
        assert torch.equal(x, z) and not torch.equal(x, y)


def test_edge_values():
    nan = float("nan")
    g = torch._standard_gamma(torch.tensor([0.0, nan, 1e-30], device=DEVICE)).cpu()
    assert g[0] == 0 and g[1].isnan() and g[2] >= torch.finfo(torch.float32).tiny
    k = torch.poisson(torch.tensor([0.0, nan], device=DEVICE)).cpu()
    assert k[0] == 0 and k[1].isnan()
    c = torch.tensor([0.0, 7.0, 7.0, 12.0], device=DEVICE)
    p = torch.tensor([0.4, 0.0, 1.0, nan], device=DEVICE)
    k = torch.binomial(c, p).cpu()
    assert k[0] == 0 and k[1] == 0 and k[2] == 7 and k[3].isnan()
    for dtype in (torch.float64, torch.bfloat16):
        assert torch._standard_gamma(torch.ones(4, dtype=dtype, device=DEVICE)).dtype == dtype
    with pytest.raises(RuntimeError, match="count and prob of one shape"):
        torch.binomial(torch.ones(3, device=DEVICE), torch.ones(2, device=DEVICE))
