"""torch_ext.profiler: per-op device time under the aten op and kernel names
(csrc/runtime/Profiler.cpp's PrivateUse1 hooks), on whichever driver runs."""

import json

import torch

import torch_ext  # noqa: F401
from torch_ext.profiler import profile


def _train_step(dev):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    model = model.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 16).to(dev)
    y = torch.randint(0, 4, (8,)).to(dev)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def test_ops_have_device_time_and_kernel_names(tmp_path):
    dev = torch.device("privateuseone", 0)
    step = _train_step(dev)
    step()  # compile the kernels outside the profile
    with profile() as prof:
        step()
        torch.privateuseone.synchronize()
    events = prof.events()
    mm = [e for e in events if e.name in ("aten::addmm", "aten::mm")]
    assert mm, sorted({e.name for e in events})
    assert all(e.device_time > 0 for e in mm), [(e.name, e.device_time) for e in mm]
    # Kernel names nest under the aten op that launched them, with device time.
    kernels = [e for e in events if e.name.startswith("triton:")]
    assert kernels, "no triton:<kernel> ranges recorded"
    assert any(e.device_time > 0 for e in kernels)
    # (ops the C++ fast path replays on a GPU have a cuLaunchKernel child instead)
    aten = [e for e in events if e.name.startswith("aten::")]
    assert any(c.name.startswith("triton:") for e in aten for c in e.cpu_children)
    gelu = [e for e in events if e.name == "aten::gelu"]
    assert gelu and all(g.device_time > 0 for g in gelu), [(g.name, g.device_time) for g in gelu]
    table = prof.key_averages().table(sort_by="device_time_total", row_limit=10)
    assert "aten::" in table
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    data = json.loads(trace.read_text())
    names = {e.get("name") for e in data["traceEvents"]}
    assert "aten::gelu" in names and any(str(n).startswith("triton:") for n in names)


def test_cpu_only_profile_still_works():
    from torch.profiler import ProfilerActivity

    x = torch.randn(4, 4, device="privateuseone")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        (x + x).sum().item()
    assert any(e.name == "aten::add" for e in prof.events())
    assert all(e.device_time == 0 for e in prof.events())
