"""torch.compile's default backend (Inductor) on privateuseone (torch_ext/inductor.py):
Inductor generates C++ kernels on the host driver, Triton kernels on the cuda
driver; matrix products and attention stay our ops (extern kernels). Against the
CPU and against eager privateuseone."""

import copy
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend
from torch._inductor.utils import run_and_get_code

import torch_ext
from torch_ext import inductor
from torch_ext.demo import TinyDecoder

from helpers import DEV

ON_GPU = torch_ext.driver_name() == "cuda"
TOL = dict(atol=2e-3, rtol=2e-3) if ON_GPU else dict(atol=1e-5, rtol=1e-5)  # TF32 products


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _fn(x, w, b):
    h = F.linear(x, w, b)
    return (F.gelu(h) * 2 + 1).sum(-1), torch.softmax(h, -1), h.amax(0)


def test_fused_kernels_and_our_matmul():
    torch.manual_seed(0)
    args = [torch.randn(16, 24), torch.randn(32, 24), torch.randn(32)]
    torch_ext.reset_fallback_stats()
    out, (code,) = run_and_get_code(torch.compile(_fn), *[a.to(DEV) for a in args])
    # Inductor's fused kernels, our addmm as its extern kernel, on our device
    assert ("@triton.jit" if ON_GPU else "cpp_fused") in code
    assert "extern_kernels.addmm" in code
    assert "device='privateuseone'" in code
    for o, r in zip(out, _fn(*args)):
        assert o.device.type == DEV
        torch.testing.assert_close(o.cpu(), r, **TOL)
    assert torch_ext.fallback_stats() == {}


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_training_matches_eager(norm):
    """A decoder (attention, norms, MLP) compiled whole: one graph, loss and every
    gradient as eager privateuseone's and the CPU's."""
    torch.manual_seed(0)
    cpu_model = TinyDecoder(norm=norm)
    eager = copy.deepcopy(cpu_model).to(DEV)
    dev_model = copy.deepcopy(cpu_model).to(DEV)
    cnt = CompileCounterWithBackend("inductor")
    compiled = torch.compile(dev_model, backend=cnt, fullgraph=True)
    inputs, targets = TinyDecoder.batch(seed=1)
    loss = TinyDecoder.loss(compiled, inputs.to(DEV), targets.to(DEV))
    loss.backward()
    assert cnt.frame_count == 1
    eager_loss = TinyDecoder.loss(eager, inputs.to(DEV), targets.to(DEV))
    eager_loss.backward()
    cpu_loss = TinyDecoder.loss(cpu_model, inputs, targets)
    cpu_loss.backward()
    torch.testing.assert_close(loss.detach().cpu(), eager_loss.detach().cpu(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(loss.detach().cpu(), cpu_loss.detach(), atol=1e-5, rtol=1e-5)
    eager_params = dict(eager.named_parameters())
    for name, p in dev_model.named_parameters():
        assert p.grad is not None and p.grad.device.type == DEV, name
        torch.testing.assert_close(
            p.grad.cpu(), eager_params[name].grad.cpu(), atol=1e-5, rtol=1e-4
        )


def test_backward_inside_the_compiled_function():
    """`loss.backward()` inside the compiled function: dynamo breaks the graph there
    and runs it eagerly, with its frame hook still set; our kernels' Python (and
    Triton's interpreter) run as they are, not traced as user code."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 1))
    ref = copy.deepcopy(model)
    model = model.to(DEV)
    x = torch.randn(4, 8)

    @torch.compile
    def fwd_bwd(m, x):
        loss = m(x).square().mean()
        loss.backward()
        return loss

    loss = fwd_bwd(model, x.to(DEV))
    ref_loss = ref(x).square().mean()
    ref_loss.backward()
    torch.testing.assert_close(loss.detach().cpu(), ref_loss.detach(), atol=1e-6, rtol=1e-5)
    for p, r in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.cpu(), r.grad, atol=1e-6, rtol=1e-5)


def test_runtime_frames_are_skipped_not_user_code():
    from torch._dynamo import trace_rules

    from torch_ext import demo, fused
    from torch_ext.ops import _launch

    assert trace_rules.check_file(_launch.__file__).skipped
    assert trace_rules.check_file(sys.modules["triton"].__file__).skipped
    # what users call in models, and their own files, are still traced
    for module in (demo, fused, sys.modules[__name__]):
        assert not trace_rules.check_file(module.__file__).skipped, module


def test_device_interface_and_stream():
    from torch._dynamo.device_interface import get_interface_for_device
    from torch._inductor.codegen.common import get_device_op_overrides

    interface = get_interface_for_device(DEV)
    assert interface.device_count() == torch.privateuseone.device_count()
    assert interface.current_device() == torch.privateuseone.current_device()
    assert interface.is_triton_capable() is ON_GPU  # the host driver: C++ kernels
    main = interface.get_raw_stream(0)
    side = torch.privateuseone.Stream()
    with torch.privateuseone.stream(side):
        assert inductor.get_raw_stream(0) == side.native_handle
    assert inductor.get_raw_stream(0) == main
    line = get_device_op_overrides(DEV).import_get_raw_stream_as("get_raw_stream")
    namespace = {}
    exec(line, namespace)
    assert namespace["get_raw_stream"] is inductor.get_raw_stream


def test_import_does_not_load_inductor():
    """`import torch_ext` registers with dynamo and Inductor when they are first
    imported, not before (Inductor's import costs a second)."""
    code = (
        "import sys, torch, torch_ext\n"
        "assert 'torch._inductor.graph' not in sys.modules\n"
        "import torch._inductor.graph\n"
        "from torch._inductor.codegen.common import get_scheduling_for_device\n"
        "assert get_scheduling_for_device('privateuseone') is not None\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
