"""Every collective the backend serves, sync and async, per dtype, against a
reference computed from the ranks' inputs (each rank's input is a known
function of its rank)."""

import os

import pytest
import torch
import torch.distributed as dist

from tests.distributed.harness import device_for, run

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.int64]


def value(rank, shape, dtype, salt=0):
    """Rank r's input: small integers, exact in every dtype tested."""
    n = 1
    for s in shape:
        n *= s
    x = (torch.arange(n, dtype=torch.int64).reshape(shape) + 3 * rank + salt) % 7 + 1
    return x.to(dtype)


def check(got, want, what):
    got = got.cpu()
    assert torch.equal(got, want.to(got.dtype)), f"{what}: got {got}, want {want}"


def _collectives(rank, ws, async_op):
    dev = device_for(rank)
    for dtype in DTYPES:
        inputs = [value(r, (3, 4), dtype) for r in range(ws)]
        stacked = torch.stack([i.double() for i in inputs])
        reductions = {
            dist.ReduceOp.SUM: stacked.sum(0),
            dist.ReduceOp.PRODUCT: stacked.prod(0),
            dist.ReduceOp.MIN: stacked.min(0).values,
            dist.ReduceOp.MAX: stacked.max(0).values,
        }
        if dtype.is_floating_point:
            reductions[dist.ReduceOp.AVG] = stacked.mean(0)
            reductions[dist._make_nccl_premul_sum(2.0)] = stacked.sum(0) * 2
        else:
            reductions[dist.ReduceOp.AVG] = torch.div(stacked.sum(0), ws, rounding_mode="trunc")
        for op, want in reductions.items():
            t = inputs[rank].to(dev)
            w = dist.all_reduce(t, op=op, async_op=async_op)
            if async_op:
                assert w.wait()
                check(w.get_future().wait()[0], want, f"all_reduce future {op}")
            check(t, want, f"all_reduce {op} {dtype}")

        # non-contiguous input: a transposed view, reduced in place
        t = inputs[rank].to(dev).t()
        dist.all_reduce(t)
        check(t, reductions[dist.ReduceOp.SUM].t(), f"all_reduce non-contiguous {dtype}")

        ts = [inputs[rank].to(dev), inputs[rank].to(dev) * 2]
        dist.all_reduce_coalesced(ts)
        check(ts[1], reductions[dist.ReduceOp.SUM] * 2, "all_reduce_coalesced")

        t = inputs[rank].to(dev)
        w = dist.broadcast(t, src=ws - 1, async_op=async_op)
        if async_op:
            w.wait()
        check(t, inputs[ws - 1], "broadcast")

        t = inputs[rank].to(dev)
        dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
        if rank == 0:
            check(t, reductions[dist.ReduceOp.MAX], "reduce")

        outs = [torch.empty(3, 4, dtype=dtype, device=dev) for _ in range(ws)]
        w = dist.all_gather(outs, inputs[rank].to(dev), async_op=async_op)
        if async_op:
            w.wait()
        for r in range(ws):
            check(outs[r], inputs[r], "all_gather")

        out = torch.empty(ws * 3, 4, dtype=dtype, device=dev)
        w = dist.all_gather_into_tensor(out, inputs[rank].to(dev), async_op=async_op)
        if async_op:
            w.wait()
        check(out, torch.cat(inputs), "all_gather_into_tensor")
        # the stack form, and one flat buffer of any shape (NCCL's contract;
        # SyncBatchNorm gathers into (1, ws * n))
        for shape in ((ws, 3, 4), (1, ws * 12)):
            out = torch.empty(shape, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(out, inputs[rank].to(dev))
            check(out, torch.cat(inputs).reshape(shape), f"all_gather_into_tensor {shape}")

        # reduce_scatter: rank r gets the sum of every rank's chunk r
        chunks = [[value(src, (2, 3), dtype, salt=c) for c in range(ws)] for src in range(ws)]
        want_rs = sum(chunks[src][rank].double() for src in range(ws))
        out = torch.empty(2, 3, dtype=dtype, device=dev)
        dist.reduce_scatter(out, [c.to(dev) for c in chunks[rank]])
        check(out, want_rs, "reduce_scatter")
        out = torch.empty(2, 3, dtype=dtype, device=dev)
        w = dist.reduce_scatter_tensor(
            out, torch.cat(chunks[rank]).to(dev), op=dist.ReduceOp.SUM, async_op=async_op
        )
        if async_op:
            w.wait()
        check(out, want_rs, "reduce_scatter_tensor")
        out = torch.empty(6, dtype=dtype, device=dev)  # flat buffers
        dist.reduce_scatter_tensor(out, torch.cat(chunks[rank]).reshape(1, -1).to(dev))
        check(out, want_rs.reshape(-1), "reduce_scatter_tensor, flat buffers")
        if dtype.is_floating_point:
            out = torch.empty(2, 3, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(out, torch.cat(chunks[rank]).to(dev), op=dist.ReduceOp.AVG)
            check(out, want_rs / ws, "reduce_scatter_tensor AVG")

        # all_to_all_single with uneven splits: rank s sends (r + 1) rows to rank r
        send = torch.cat([value(rank, (r + 1, 2), dtype, salt=r) for r in range(ws)])
        recv = torch.empty((rank + 1) * ws, 2, dtype=dtype, device=dev)
        dist.all_to_all_single(
            recv,
            send.to(dev),
            output_split_sizes=[rank + 1] * ws,
            input_split_sizes=[r + 1 for r in range(ws)],
        )
        check(
            recv,
            torch.cat([value(s, (rank + 1, 2), dtype, salt=rank) for s in range(ws)]),
            "all_to_all_single",
        )
        outs = [torch.empty(2, dtype=dtype, device=dev) for _ in range(ws)]
        dist.all_to_all(outs, [value(rank, (2,), dtype, salt=r).to(dev) for r in range(ws)])
        for s in range(ws):
            check(outs[s], value(s, (2,), dtype, salt=rank), "all_to_all")

        # gather / scatter at rank 0
        gl = [torch.empty(3, 4, dtype=dtype, device=dev) for _ in range(ws)] if rank == 0 else None
        dist.gather(inputs[rank].to(dev), gl, dst=0)
        if rank == 0:
            for r in range(ws):
                check(gl[r], inputs[r], "gather")
        out = torch.empty(3, 4, dtype=dtype, device=dev)
        dist.scatter(out, [i.to(dev) for i in inputs] if rank == 0 else None, src=0)
        check(out, inputs[rank], "scatter")

        # point to point around a ring
        nxt, prv = (rank + 1) % ws, (rank - 1) % ws
        got = torch.empty(3, 4, dtype=dtype, device=dev)
        reqs = dist.batch_isend_irecv(
            [dist.P2POp(dist.isend, inputs[rank].to(dev), nxt), dist.P2POp(dist.irecv, got, prv)]
        )
        for req in reqs:
            req.wait()
        check(got, inputs[prv], "batch_isend_irecv")
        if rank == 0:
            dist.send(inputs[0].to(dev), dst=1)
        elif rank == 1:
            got = torch.empty(3, 4, dtype=dtype, device=dev)
            dist.recv(got, src=0)
            check(got, inputs[0], "send/recv")
    dist.barrier()
    w = dist.barrier(async_op=True)
    w.wait()


# Sync at world size 2, async (Work.wait, futures) at 4: each spawn costs
# several seconds of imports on CI's two cores.
@pytest.mark.slow
def test_collectives_world2_sync():
    run(_collectives, 2, False)


@pytest.mark.slow
def test_collectives_world4_async():
    run(_collectives, 4, True)


def _staged(rank, ws):
    import torch_ext

    assert not torch_ext._C._driver_host_addressable()  # gloo gets staged copies
    dev = device_for(rank)
    t = torch.full((5,), float(rank + 1), device=dev)
    w = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    got = w.get_future().wait()[0]
    assert got.device == dev
    check(got, torch.full((5,), (ws + 1) / 2), "staged all_reduce future")
    out = torch.empty(ws * 3, device=dev)
    dist.all_gather_into_tensor(out, torch.full((3,), float(rank), device=dev))
    check(out, torch.arange(ws, dtype=torch.float32).repeat_interleave(3), "staged all_gather")
    out = torch.empty(2, device=dev)
    dist.reduce_scatter_tensor(out, torch.ones(2 * ws, device=dev))
    check(out, torch.full((2,), float(ws)), "staged reduce_scatter_tensor")


@pytest.mark.slow
def test_staged_when_memory_is_protected(monkeypatch):
    """TORCH_EXT_HOST_PROTECT=1: device memory is not host-readable, so the
    backend takes the path the cuda driver takes (copies around gloo)."""
    if os.environ.get("TORCH_EXT_DRIVER", "auto") == "cuda":
        pytest.skip("host driver setting; the cuda driver stages in every test")
    monkeypatch.setenv("TORCH_EXT_HOST_PROTECT", "1")
    run(_staged, 2)
