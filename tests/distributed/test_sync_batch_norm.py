"""nn.SyncBatchNorm on privateuseone: two ranks under DDP train a small CNN as one
process does with batch norm over the global batch (weights, running stats), NCHW and
channels_last, every op native; ranks with unequal (and empty) shares of a batch
normalise with the global statistics and get the global batch's input gradients."""

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_ext
from tests.distributed.harness import device_for, run

STEPS = 3
BATCH = 8


def _cnn():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8, momentum=None), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5),
    )  # fmt: skip


def _batch(step):
    g = torch.Generator().manual_seed(200 + step)
    return torch.randn(BATCH, 3, 6, 6, generator=g), torch.randint(0, 5, (BATCH,), generator=g)


def _train(model, dev, shard, fmt):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = _batch(step)
        x, y = shard(x), shard(y)
        opt.zero_grad()
        out = model(x.to(dev).to(memory_format=fmt))
        nn.functional.cross_entropy(out, y.to(dev)).backward()
        opt.step()
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def _ddp(rank, ws, fmt):
    # float32 convolutions as the CPU reference computes them: no TF32 on a GPU (torch's
    # default for cuDNN convolutions, which ours follow, would move the variances by ~1e-3)
    torch._C._set_cudnn_allow_tf32(False)
    dev = device_for(rank)
    want = _train(_cnn(), torch.device("cpu"), lambda t: t, torch.contiguous_format)
    model = nn.SyncBatchNorm.convert_sync_batchnorm(_cnn()).to(dev).to(memory_format=fmt)
    model = DDP(model, device_ids=[dev.index])
    n = BATCH // ws
    torch_ext.fallback_mode("error")
    got = _train(model, dev, lambda t: t[rank * n : (rank + 1) * n], fmt)
    for k, v in want.items():
        torch.testing.assert_close(got["module." + k], v, atol=2e-5, rtol=1e-4, msg=k)


def _uneven(rank, ws):
    dev = device_for(rank)
    torch.manual_seed(1)
    x = torch.randn(5, 4, 3, 3).double()
    dy = torch.randn_like(x)
    bn = nn.BatchNorm2d(4).double()
    nn.init.normal_(bn.weight)
    xr = x.clone().requires_grad_()
    y_ref = bn(xr)
    y_ref.backward(dy)
    cut = [0, 4, 5, 5][rank : rank + 2]  # rank 0: 4 samples, rank 1: 1, rank 2: none
    sync = nn.SyncBatchNorm(4).float()
    sync.load_state_dict({k: v.float() for k, v in nn.BatchNorm2d(4).state_dict().items()})
    sync.weight.data.copy_(bn.weight.detach().float())
    sync = sync.to(dev)
    torch_ext.fallback_mode("error")
    xs = x[cut[0] : cut[1]].float().to(dev).requires_grad_()
    ys = sync(xs)
    ys.backward(dy[cut[0] : cut[1]].float().to(dev))
    torch.testing.assert_close(
        ys.detach().cpu().double(), y_ref.detach()[cut[0] : cut[1]], atol=1e-5, rtol=1e-5
    )
    if rank < 2:  # the empty rank's input gets no gradient (torch's SyncBatchNorm)
        torch.testing.assert_close(
            xs.grad.cpu().double(), xr.grad[cut[0] : cut[1]], atol=1e-5, rtol=1e-5
        )
    torch.testing.assert_close(
        sync.running_mean.cpu().double(), bn.running_mean, atol=1e-6, rtol=1e-5
    )
    torch.testing.assert_close(
        sync.running_var.cpu().double(), bn.running_var, atol=1e-6, rtol=1e-5
    )
    dist.barrier()


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [torch.contiguous_format, torch.channels_last])
def test_sync_batch_norm_ddp_matches_global_batch_norm(fmt):
    run(_ddp, 2, fmt)


@pytest.mark.slow
def test_sync_batch_norm_unequal_and_empty_ranks():
    run(_uneven, 3)
