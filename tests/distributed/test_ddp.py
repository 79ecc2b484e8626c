"""DDP on privateuseone trains like one process on the global batch: the
Reducer's buckets, gradient_as_bucket_view, static_graph,
find_unused_parameters, no_sync, a bf16 compression hook, and the model's
forward under torch.compile (Inductor on privateuseone)."""

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from tests.distributed.harness import device_for, run
from tests.distributed.models import (
    STEPS,
    assert_close,
    batch,
    loss_fn,
    make_model,
    reference,
    shard,
)


def _train(rank, ws, dev, accumulate=False, hook=None, compiled=False, **ddp_kwargs):
    # small buckets: several per step; compiled, DDP's default (dynamo's DDP optimizer
    # wants the first bucket, 1 MB, no larger than the others)
    cap = 25 if compiled else 0.01
    model = DDP(make_model().to(dev), device_ids=[dev.index], bucket_cap_mb=cap, **ddp_kwargs)
    if hook is not None:
        model.register_comm_hook(ws, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    forward = torch.compile(model) if compiled else model
    for step in range(STEPS):
        x, y = batch(step)
        x, y = shard(x, rank, ws).to(dev), shard(y, rank, ws).to(dev)
        opt.zero_grad()
        if accumulate:  # two micro-batches, the first without a gradient sync
            with model.no_sync():
                (loss_fn(model(x[:1]), y[:1]) / 2).backward()
            (loss_fn(model(x[1:]), y[1:]) / 2).backward()
        else:
            loss_fn(forward(x), y).backward()
        opt.step()
    return {k: v.detach().cpu() for k, v in model.module.state_dict().items()}


def _bf16_hook(ws, bucket):
    """Gradients travel as bfloat16 (torch's own bf16 hook refuses non-NCCL groups)."""
    buf = bucket.buffer()
    fut = dist.all_reduce(buf.to(torch.bfloat16).div_(ws), async_op=True).get_future()
    return fut.then(lambda f: buf.copy_(f.value()[0]))


def _ddp(rank, ws):
    dev = device_for(rank)
    want = reference(dev)
    assert_close(_train(rank, ws, dev), want, "DDP")
    assert_close(
        _train(rank, ws, dev, accumulate=True, find_unused_parameters=True),
        want,
        "DDP no_sync + find_unused_parameters",
    )
    assert_close(
        _train(rank, ws, dev, hook=_bf16_hook, gradient_as_bucket_view=True, static_graph=True),
        want,
        "DDP bf16 hook + gradient_as_bucket_view + static_graph",
        atol=2e-2,
        rtol=2e-2,
    )
    assert_close(_train(rank, ws, dev, compiled=True), want, "DDP under torch.compile")
    # every rank holds the same parameters
    p = torch.cat([v.flatten() for v in want.values()]).to(dev)
    got = [torch.empty_like(p) for _ in range(ws)]
    dist.all_gather(got, p)
    assert all(torch.equal(g.cpu(), p.cpu()) for g in got)


@pytest.mark.slow
def test_ddp_matches_single_process():
    run(_ddp, 2)
