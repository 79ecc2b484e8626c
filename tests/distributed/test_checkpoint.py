"""torch.distributed.checkpoint of sharded (DTensor) state on privateuseone:
saved at world size 2, loaded at 4, saved there and loaded back at 2."""

import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor

from tests.distributed.harness import device_for, run


def full(salt):
    return torch.arange(48, dtype=torch.float32).reshape(8, 6) * (salt + 1)


def _save(rank, ws, path, salt):
    mesh = init_device_mesh("privateuseone", (ws,))
    state = {"w": distribute_tensor(full(salt).to(device_for(rank)), mesh, [Shard(0)])}
    dcp.save(state, checkpoint_id=path)


def _load_and_resave(rank, ws, path, salt, resave):
    mesh = init_device_mesh("privateuseone", (ws,))
    dev = device_for(rank)
    state = {"w": distribute_tensor(torch.zeros(8, 6, device=dev), mesh, [Shard(0)])}
    dcp.load(state, checkpoint_id=path)
    local = state["w"].to_local()
    assert local.device.type == "privateuseone"
    n = 8 // ws
    assert torch.equal(local.cpu(), full(salt)[rank * n : (rank + 1) * n])
    assert torch.equal(state["w"].full_tensor().cpu(), full(salt))
    if resave:
        state = {"w": distribute_tensor(full(salt + 1).to(dev), mesh, [Shard(0)])}
        dcp.save(state, checkpoint_id=resave)


@pytest.mark.slow
def test_dcp_save_2_load_4_and_back(tmp_path):
    first, second = str(tmp_path / "at2"), str(tmp_path / "at4")
    run(_save, 2, first, 0)
    run(_load_and_resave, 4, first, 0, second)
    run(_load_and_resave, 2, second, 1, None)
