"""How users reach the backend: the init_process_group spellings, new_group,
DeviceMesh, group names, device_id, monitored_barrier; pinned memory that
DDP's Reducer needs; clear errors for tensors of two devices and mismatched
sizes."""

import warnings

import pytest
import torch
import torch.distributed as dist

import torch_ext  # noqa: F401
from tests.distributed.harness import device_for, run


def _check_group(rank, ws, with_cpu):
    dev = device_for(rank)
    pg = dist.group.WORLD
    assert pg._get_backend(dev) is not None
    assert isinstance(pg.group_name, str) and pg.group_name
    t = torch.full((4,), float(rank + 1), device=dev)
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), torch.full((4,), ws * (ws + 1) / 2))
    if with_cpu:  # CPU tensors go to gloo
        c = torch.ones(2)
        dist.all_reduce(c)
        assert torch.equal(c, torch.full((2,), float(ws)))
    else:  # init_process_group() maps only the accelerator, as torch does for CUDA
        with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
            dist.all_reduce(torch.ones(2))
    sub = dist.new_group([0, 1])
    t = torch.ones(3, device=dev)
    dist.all_reduce(t, group=sub)
    assert torch.equal(t.cpu(), torch.full((3,), 2.0))
    mesh = dist.init_device_mesh("privateuseone", (ws,))
    assert mesh.device_type == "privateuseone"
    t = torch.ones(2, device=dev)
    dist.all_reduce(t, group=mesh.get_group())
    assert torch.equal(t.cpu(), torch.full((2,), float(ws)))
    # functional collectives (what DTensor uses)
    import torch.distributed._functional_collectives as fc

    out = fc.all_reduce(torch.ones(2, device=dev), "sum", mesh.get_group())
    assert torch.equal(out.cpu(), torch.full((2,), float(ws)))
    g = fc.all_gather_tensor(torch.full((1,), float(rank), device=dev), 0, mesh.get_group())
    assert torch.equal(g.cpu(), torch.arange(ws, dtype=torch.float32))
    objs = [None] * ws
    dist.all_gather_object(objs, {"rank": rank})
    assert objs == [{"rank": r} for r in range(ws)]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch_ext", None], ids=["ours", "default"])
def test_init_spellings(backend):
    run(_check_group, 2, backend is not None, backend=backend)


def _mixed(rank, ws):
    _check_group(rank, ws, True)
    _monitored(rank, ws)


def _monitored(rank, ws):
    # torch runs monitored_barrier only on a group whose backend is "gloo"
    # (it compares the group's backend string): a gloo group beside ours.
    gloo = dist.new_group(backend="gloo")
    dist.monitored_barrier(group=gloo)
    with pytest.raises(ValueError, match="only implemented for GLOO"):
        dist.monitored_barrier()


@pytest.mark.slow
def test_mixed_backend_and_monitored_barrier_through_cpu_gloo():
    run(_mixed, 2, backend="cpu:gloo,privateuseone:torch_ext")


def _faults(rank, ws):
    dev = device_for(rank)
    if torch.privateuseone.device_count() >= 2:
        a = torch.ones(2, device="privateuseone:0")
        b = torch.ones(2, device="privateuseone:1")
        with pytest.raises(RuntimeError, match="one collective takes tensors of one device"):
            dist.all_reduce_coalesced([a, b])
    keep = torch.arange(6, dtype=torch.float32, device=dev)
    # gloo aborts the process on a size mismatch it meets on the wire; torch's
    # TORCH_DISTRIBUTED_DEBUG=DETAIL wrapper (which wraps our backend too)
    # compares the ranks' shapes first and raises on every rank.
    t = torch.ones(3 + rank, device=dev)
    with pytest.raises(RuntimeError, match="mismatch"):
        dist.all_reduce(t)
    assert torch.equal(keep.cpu(), torch.arange(6, dtype=torch.float32))


@pytest.mark.slow
def test_fault_errors(monkeypatch):  # the two-device case where there are two devices
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "DETAIL")
    run(_faults, 2)


def test_pinned_memory():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = torch.ones(4).pin_memory("privateuseone")
        assert p.is_pinned("privateuseone")
        assert not torch.ones(4).is_pinned("privateuseone")
    e = torch.empty(8, pin_memory=True)  # the accelerator's pinned allocator
    assert e.is_pinned()
