"""FSDP2 (fully_shard) and DTensor tensor parallelism on privateuseone."""

import pytest
import torch
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)

from tests.distributed.harness import device_for, run
from tests.distributed.models import STEPS, assert_close, batch, loss_fn, make_model, reference
from tests.distributed.models import shard


def _fsdp(rank, ws):
    dev = device_for(rank)
    want = reference(dev)
    mesh = init_device_mesh("privateuseone", (ws,))
    model = make_model().to(dev)
    fully_shard(model.block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = batch(step)
        opt.zero_grad()
        loss_fn(model(shard(x, rank, ws).to(dev)), shard(y, rank, ws).to(dev)).backward()
        opt.step()
    got = {
        k: (v.full_tensor() if isinstance(v, DTensor) else v).detach().cpu()
        for k, v in model.state_dict().items()
    }
    assert_close(got, want, "FSDP2")


@pytest.mark.slow
def test_fsdp2_matches_single_process():
    run(_fsdp, 2)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def _tp(rank, ws):
    dev = device_for(rank)
    torch.manual_seed(0)
    dense = MLP().to(dev)
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1)).to(dev)
    want = dense(x)
    want.sum().backward()
    want_grad = dense.up.weight.grad.cpu()
    torch.manual_seed(0)
    tp = MLP().to(dev)
    mesh = init_device_mesh("privateuseone", (ws,))
    parallelize_module(tp, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    got = tp(x)
    torch.testing.assert_close(got.cpu(), want.detach().cpu(), atol=1e-5, rtol=1e-5)
    got.sum().backward()
    torch.testing.assert_close(
        tp.up.weight.grad.full_tensor().cpu(), want_grad, atol=1e-5, rtol=1e-5
    )


@pytest.mark.slow
def test_tensor_parallel_matches_dense():
    run(_tp, 2)
