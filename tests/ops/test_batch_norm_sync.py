"""ops/batch_norm_sync.py: SyncBatchNorm's batch-norm pieces against float64 formulas
(the CPU has no kernels for them), each rank's slice of a batch at a time, and their
composition (what SyncBatchNorm computes between its collectives) against batch norm
over the whole batch."""

import pytest
import torch
import torch.nn.functional as F


DEVICE = "privateuseone"
EPS = 1e-5


def _dims(x):
    return [0, *range(2, x.dim())]


def _ref_stats(x):
    x = x.double()
    mean = x.mean(_dims(x))
    var = x.var(_dims(x), unbiased=False)
    return mean, (var + EPS).rsqrt()


def _layout(x, channels_last):
    if channels_last and x.dim() == 4:
        return x.to(memory_format=torch.channels_last)
    if channels_last and x.dim() == 5:
        return x.to(memory_format=torch.channels_last_3d)
    return x


SHAPES = [(4, 3, 5, 7), (2, 16, 3), (3, 5, 2, 3, 4), (64, 8)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_stats_and_elemt(shape, dtype, channels_last):
    x = torch.randn(shape).mul(3).add(1).to(dtype)
    d = _layout(x, channels_last).to(DEVICE)
    mean, invstd = torch.batch_norm_stats(d, EPS)
    assert mean.dtype == invstd.dtype == torch.float32  # accumulate type, as CUDA's
    rm, ri = _ref_stats(x)
    tol = dict(atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(mean.cpu().double(), rm, **tol)
    torch.testing.assert_close(invstd.cpu().double(), ri, **tol)
    C = shape[1]
    w, b = torch.randn(C), torch.randn(C)
    y = torch.batch_norm_elemt(d, w.to(DEVICE), b.to(DEVICE), mean, invstd, EPS)
    assert y.dtype == dtype and y.shape == d.shape
    assert y.is_contiguous(memory_format=torch.channels_last) == d.is_contiguous(
        memory_format=torch.channels_last
    )
    view = [1, C] + [1] * (x.dim() - 2)
    want = (x.double() - mean.cpu().double().view(view)) * invstd.cpu().double().view(view)
    want = want * w.double().view(view) + b.double().view(view)
    t = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(y.cpu().double(), want, atol=t, rtol=t)
    out = torch.empty(0, dtype=dtype, device=DEVICE)
    torch.batch_norm_elemt(d, None, None, mean, invstd, EPS, out=out)
    want = (x.double() - mean.cpu().double().view(view)) * invstd.cpu().double().view(view)
    torch.testing.assert_close(out.cpu().double(), want, atol=t, rtol=t)


def test_gather_merges_ranks_and_updates_running_stats():
    x = torch.randn(11, 6, 4, 3) * 2 + 0.5
    parts = [x[:3], x[3:4], x[4:4], x[4:]]  # unequal ranks, one of them empty
    means, invstds, counts = [], [], []
    for p in parts:
        if p.numel():
            m, i = torch.batch_norm_stats(p.to(DEVICE), EPS)
        else:  # SyncBatchNorm sends zeros with a count of 0
            m = i = torch.zeros(6, device=DEVICE)
        means.append(m)
        invstds.append(i)
        counts.append(p.numel() // p.shape[1])
    rmean, rvar = torch.randn(6), torch.rand(6) + 0.5
    drm, drv = rmean.to(DEVICE), rvar.to(DEVICE)
    counts_t = torch.tensor(counts, dtype=torch.float32, device=DEVICE)
    mean, invstd = torch.batch_norm_gather_stats_with_counts(
        x.to(DEVICE), torch.stack(means), torch.stack(invstds), drm, drv, 0.1, EPS, counts_t
    )
    rm, ri = _ref_stats(x)
    torch.testing.assert_close(mean.cpu().double(), rm, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(invstd.cpu().double(), ri, atol=1e-5, rtol=1e-5)
    unbiased = x.double().var(_dims(x), unbiased=True)
    torch.testing.assert_close(
        drm.cpu().double(), 0.9 * rmean.double() + 0.1 * rm, atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(
        drv.cpu().double(), 0.9 * rvar.double() + 0.1 * unbiased, atol=1e-5, rtol=1e-5
    )
    # the fixed-count form: equal ranks
    halves = [x[:5], x[5:10]]
    st = [torch.batch_norm_stats(h.to(DEVICE), EPS) for h in halves]
    mean, invstd = torch.batch_norm_gather_stats(
        x.to(DEVICE), torch.stack([s[0] for s in st]), torch.stack([s[1] for s in st]),
        None, None, 0.1, EPS, 5 * 12,
    )  # fmt: skip
    rm, ri = _ref_stats(x[:10])
    torch.testing.assert_close(mean.cpu().double(), rm, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(invstd.cpu().double(), ri, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("affine", [True, False])
def test_sync_composition_matches_batch_norm(channels_last, affine):
    """Two 'ranks' through SyncBatchNorm's sequence (the collectives are sums and
    concatenations done here) give batch norm's output and gradients on the whole batch."""
    torch.manual_seed(0)
    x = torch.randn(6, 5, 4, 3).double()
    w = torch.randn(5).double() if affine else None
    b = torch.randn(5).double() if affine else None
    dy = torch.randn_like(x)
    xr = x.clone().requires_grad_()
    wr = w.clone().requires_grad_() if affine else None
    br = b.clone().requires_grad_() if affine else None
    y_ref = F.batch_norm(xr, None, None, wr, br, training=True, eps=EPS)
    y_ref.backward(dy)

    dev = lambda t: None if t is None else _layout(t.float(), channels_last).to(DEVICE)  # noqa: E731
    shards = [(dev(x[:2]), dev(dy[:2])), (dev(x[2:]), dev(dy[2:]))]
    stats = [torch.batch_norm_stats(s, EPS) for s, _ in shards]
    counts = torch.tensor([s.numel() // 5 for s, _ in shards], dtype=torch.float32, device=DEVICE)
    mean, invstd = torch.batch_norm_gather_stats_with_counts(
        shards[0][0], torch.stack([m for m, _ in stats]), torch.stack([i for _, i in stats]),
        None, None, 0.1, EPS, counts,
    )  # fmt: skip
    ys = [torch.batch_norm_elemt(s, dev(w), dev(b), mean, invstd, EPS) for s, _ in shards]
    torch.testing.assert_close(
        torch.cat([y.cpu() for y in ys]).double(), y_ref.detach(), atol=1e-5, rtol=1e-5
    )
    reduced = [
        torch.batch_norm_backward_reduce(g, s, mean, invstd, dev(w), True, affine, affine)
        for s, g in shards
    ]
    sum_dy = sum(r[0] for r in reduced)  # the all-reduce
    sum_dy_xmu = sum(r[1] for r in reduced)
    if affine:
        torch.testing.assert_close(
            (reduced[0][2] + reduced[1][2]).cpu().double(), wr.grad, atol=1e-4, rtol=1e-4
        )
        torch.testing.assert_close(
            (reduced[0][3] + reduced[1][3]).cpu().double(), br.grad, atol=1e-4, rtol=1e-4
        )
    else:
        assert reduced[0][2] is None and reduced[0][3] is None
    count = counts.to(torch.int32).view(-1, 1)
    dxs = [
        torch.batch_norm_backward_elemt(g, s, mean, invstd, dev(w), sum_dy, sum_dy_xmu, count)
        for s, g in shards
    ]
    assert dxs[0].is_contiguous(memory_format=torch.channels_last) == channels_last
    torch.testing.assert_close(
        torch.cat([d.cpu() for d in dxs]).double(), xr.grad, atol=1e-5, rtol=1e-5
    )


def test_bad_shapes_name_the_problem():
    x = torch.randn(4, 3, 5, device=DEVICE)
    mean, invstd = torch.batch_norm_stats(x, EPS)
    with pytest.raises(RuntimeError, match="batch_norm_elemt's weight expects 3 channel"):
        torch.batch_norm_elemt(x, torch.ones(4, device=DEVICE), None, mean, invstd, EPS)
    with pytest.raises(RuntimeError, match="expects 2 counts, got 3"):
        torch.batch_norm_gather_stats_with_counts(
            x, torch.stack([mean, mean]), torch.stack([invstd, invstd]), None, None, 0.1, EPS,
            torch.ones(3, device=DEVICE),
        )  # fmt: skip
