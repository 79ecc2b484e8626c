"""float64 stays float64: every reduction, norm and loss accumulates float64 inputs in float64.
A float32 accumulator shows as a relative error near 1e-8 on these sizes; float64 results agree
with the CPU to about 1e-15, so the tolerance is 1e-12, forward and backward."""

import pytest
import torch
import torch.nn.functional as F

from helpers import DEV

TOL = dict(rtol=1e-12, atol=1e-12)


def inputs(*shapes, positive=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for s in shapes:
        t = torch.rand(s, generator=g, dtype=torch.float64) + 0.5 if positive else None
        if t is None:
            t = torch.randn(s, generator=g, dtype=torch.float64) * 3 + 0.25
        out.append(t)
    return out


def agree(fn, *args, grad=True):
    """fn on the device and on the CPU: results and, for floating inputs, gradients."""
    cpu = [a.clone().requires_grad_(grad and a.is_floating_point()) for a in args]
    dev = [a.to(DEV).requires_grad_(grad and a.is_floating_point()) for a in args]
    r_cpu, r_dev = fn(*cpu), fn(*dev)
    assert r_dev.dtype == torch.float64
    torch.testing.assert_close(r_dev.cpu(), r_cpu, **TOL)
    if grad and r_cpu.requires_grad:
        w = torch.linspace(-1, 1, r_cpu.numel(), dtype=torch.float64).reshape(r_cpu.shape)
        (r_cpu * w).sum().backward()
        (r_dev * w.to(DEV)).sum().backward()
        for a, b in zip(cpu, dev):
            if a.grad is not None:
                torch.testing.assert_close(b.grad.cpu(), a.grad, **TOL)


REDUCTIONS = {
    "sum": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(1),
    "mean": lambda x: x.mean(),
    "mean_dim": lambda x: x.mean(0),
    "prod_dim": lambda x: (x / 4 + 1).prod(1),
    "var": lambda x: x.var(1),
    "std": lambda x: x.std(),
    "var_mean": lambda x: torch.var_mean(x, 0)[0],
    "norm2": lambda x: x.norm(dim=1),
    "norm1": lambda x: x.norm(p=1),
    "norm3": lambda x: torch.linalg.vector_norm(x, 3, dim=0),
    "logsumexp": lambda x: torch.logsumexp(x, 1),
    "cumsum": lambda x: x.cumsum(1),
    "cumprod": lambda x: (x / 8 + 1).cumprod(1),
    "logcumsumexp": lambda x: torch.logcumsumexp(x, 1),
    "softmax": lambda x: torch.softmax(x, 1),
    "log_softmax": lambda x: torch.log_softmax(x, 1),
    "trace": lambda x: torch.trace(x[:, :16]),
    "dot": lambda x: torch.dot(x[0], x[1]),
    "mm": lambda x: x[:, :300] @ x[:, 300:600].T,
    "cosine_similarity": lambda x: F.cosine_similarity(x[:8], x[8:]),
    "cdist": lambda x: torch.cdist(x[:4, :64], x[4:, :64]),
    "pdist": lambda x: F.pdist(x[:, :64]),
    "dist": lambda x: torch.dist(x[0], x[1]),
}


# logcumsumexp's scan combines its pairs in Python under the interpreter (about 40 s of
# CI at 1000 a row); 250 still shows a float32 accumulator's error
ROW = {"logcumsumexp": 250}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_accumulate_in_float64(name):
    (x,) = inputs((16, ROW.get(name, 1000)))
    agree(REDUCTIONS[name], x, grad=name not in ("trace",))


NORMS = {
    "layer_norm": lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b),
    "rms_norm": lambda x, w, b: F.rms_norm(x, (x.shape[-1],), w),
    "group_norm": lambda x, w, b: F.group_norm(x.view(4, 8, -1), 4, w[:8], b[:8]),
    "batch_norm": lambda x, w, b: F.batch_norm(
        x.view(4, 8, -1), None, None, w[:8], b[:8], training=True
    ),
    "instance_norm": lambda x, w, b: F.instance_norm(x.view(4, 8, -1)),
    "normalize": lambda x, w, b: F.normalize(x, dim=1),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_norms_accumulate_in_float64(name):
    x, w, b = inputs((8, 1024), (1024,), (1024,))
    agree(NORMS[name], x, w, b)


def _targets(n, c, seed=3):
    return torch.randint(0, c, (n,), generator=torch.Generator().manual_seed(seed))


LOSSES = {
    "cross_entropy": lambda x, y: F.cross_entropy(x, _targets(x.shape[0], x.shape[1]).to(x.device)),
    "cross_entropy_smoothing": lambda x, y: F.cross_entropy(
        x, _targets(x.shape[0], x.shape[1]).to(x.device), label_smoothing=0.1
    ),
    "nll_loss": lambda x, y: F.nll_loss(
        torch.log_softmax(x, 1), _targets(x.shape[0], x.shape[1]).to(x.device)
    ),
    "mse": lambda x, y: F.mse_loss(x, y),
    "l1": lambda x, y: F.l1_loss(x, y),
    "smooth_l1": lambda x, y: F.smooth_l1_loss(x, y, beta=0.5),
    "huber": lambda x, y: F.huber_loss(x, y, delta=2.0),
    "bce": lambda x, y: F.binary_cross_entropy(torch.sigmoid(x), torch.sigmoid(y)),
    "bce_logits": lambda x, y: F.binary_cross_entropy_with_logits(x, torch.sigmoid(y)),
    "kl_div": lambda x, y: F.kl_div(torch.log_softmax(x, 1), torch.softmax(y, 1), reduction="sum"),
    "multi_margin": lambda x, y: F.multi_margin_loss(
        x, _targets(x.shape[0], x.shape[1]).to(x.device), reduction="mean"
    ),
    "soft_margin": lambda x, y: F.soft_margin_loss(x, torch.sign(y.detach())),
    "hinge_embedding": lambda x, y: F.hinge_embedding_loss(x, torch.sign(y.detach())),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_accumulate_in_float64(name):
    x, y = inputs((64, 200), (64, 200))
    agree(LOSSES[name], x, y)


POOLS = {
    "avg_pool1d": lambda t: F.avg_pool1d(t.flatten(2), 7),
    "avg_pool2d": lambda t: F.avg_pool2d(t, 5, padding=2, count_include_pad=False),
    "avg_pool3d": lambda t: F.avg_pool3d(t.view(2, 3, 8, 10, 20), 3),
    "max_pool2d": lambda t: F.max_pool2d(t, 3, stride=2),
    "max_pool3d": lambda t: F.max_pool3d(t.view(2, 3, 8, 10, 20), 2),
    "adaptive_max_pool2d": lambda t: F.adaptive_max_pool2d(t, (3, 3)),
    "adaptive_avg_pool2d": lambda t: F.adaptive_avg_pool2d(t, (3, 3)),
    "adaptive_avg_pool3d": lambda t: F.adaptive_avg_pool3d(t.view(2, 3, 8, 10, 20), 2),
    "interpolate_bilinear": lambda t: F.interpolate(t, scale_factor=0.37, mode="bilinear"),
    "interpolate_area": lambda t: F.interpolate(t, size=(7, 9), mode="area"),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling_in_float64(name):
    (x,) = inputs((2, 3, 40, 40))
    agree(POOLS[name], x)


def test_embedding_bag_in_float64():
    (w,) = inputs((50, 16))
    idx = torch.randint(0, 50, (400,), generator=torch.Generator().manual_seed(1))
    off = torch.tensor([0, 100, 250])
    agree(lambda t: F.embedding_bag(idx.to(t.device), t, off.to(t.device), mode="mean"), w)
