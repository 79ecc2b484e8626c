"""torch.distributed.checkpoint of sharded (DTensor) state on privateuseone:
saved at world size 2, loaded at 4, saved there and loaded back at 2."""

import contextlib
from unittest import mock

import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException
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


@contextlib.contextmanager
def _cuda_seems_available():
    """What torch's FileSystemWriter sees in a process that has CUDA: is_available()
    and a current stream, so it stages through its overlapping loader for `cuda`."""

    class Stream:
        device_type = "cuda"

        def synchronize(self):
            pass

        def wait_stream(self, other):
            pass

    stream = Stream()
    with (
        mock.patch.object(torch.cuda, "is_available", return_value=True),
        mock.patch.object(torch.cuda, "current_stream", return_value=stream),
        mock.patch.object(torch.cuda, "stream", return_value=contextlib.nullcontext()),
    ):
        yield


def _save_with_cuda_available(rank, ws, path, broken):
    import torch.distributed.checkpoint.filesystem as fs

    patched = fs._OverlappingCpuLoader
    assert getattr(patched, "torch_ext_patched", False), patched
    mesh = init_device_mesh("privateuseone", (ws,))
    state = {"w": distribute_tensor(full(3).to(device_for(rank)), mesh, [Shard(0)])}
    with _cuda_seems_available():
        # torch's own loader, as before the fix: the writer refuses our tensors.
        fs._OverlappingCpuLoader = patched.__mro__[1]
        try:
            with pytest.raises(CheckpointException, match="Tensor must be on CPU"):
                dcp.save(state, checkpoint_id=broken)
        finally:
            fs._OverlappingCpuLoader = patched
        dcp.save(state, checkpoint_id=path)


def _load(rank, ws, path, salt):
    _load_and_resave(rank, ws, path, salt, None)


@pytest.mark.slow
def test_dcp_save_where_cuda_is_available(tmp_path):
    """Issue 18: with CUDA available too, dcp.save with default arguments used to
    leave privateuseone tensors on the device and fail; torch_ext's loader copies them."""
    path = str(tmp_path / "saved")
    run(_save_with_cuda_available, 2, path, str(tmp_path / "broken"))
    run(_load, 2, path, 3)
