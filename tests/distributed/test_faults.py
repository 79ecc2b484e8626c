"""A rank that dies: the survivors get an error naming the collective and
their rank within a short timeout, not a hang, and their memory is intact."""

import os
import time

import pytest
import torch
import torch.distributed as dist

from tests.distributed.harness import device_for, run


def _killed(rank, ws):
    dev = device_for(rank)
    keep = torch.arange(8, dtype=torch.float32, device=dev)
    dist.barrier()
    if rank == ws - 1:
        os._exit(0)  # dies without a word to its peers
    t = torch.ones(1024, device=dev)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=f"allreduce failed on rank {rank} of {ws}"):
        dist.all_reduce(t)
    assert time.monotonic() - start < 30
    assert torch.equal(keep.cpu(), torch.arange(8, dtype=torch.float32))


@pytest.mark.slow
def test_killed_rank_raises():
    run(_killed, 2)
