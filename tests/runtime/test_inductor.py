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

    from torch._dynamo.utils import counters

    counters.clear()
    loss = fwd_bwd(model, x.to(DEV))
    # the one graph break is the user's backward(); none in our kernels' Python or Triton's
    breaks = dict(counters["graph_break"])
    assert len(breaks) == 1 and "backward" in next(iter(breaks)), breaks
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


@pytest.mark.parametrize("x_cl", [False, True], ids=["x_nchw", "x_cl"])
@pytest.mark.parametrize("w_cl", [False, True], ids=["w_nchw", "w_cl"])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_fake_convolution_layout_is_ours(k, w_cl, x_cl):
    """What FakeTensor says of a privateuseone convolution's layout (Inductor asserts
    it on the real outputs) is what our kernels give, forward and backward."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    cl = torch.channels_last
    x = torch.randn(2, 3 if k == 7 else 8, 14, 14, device=DEV)
    w = torch.randn(16, x.shape[1], k, k, device=DEV)
    x = x.contiguous(memory_format=cl) if x_cl else x
    w = w.contiguous(memory_format=cl) if w_cl else w
    conv = (None, [2, 2], [k // 2] * 2, [1, 1], False, [0, 0], 1)
    y = torch.ops.aten.convolution(x, w, *conv)
    gy = torch.randn(y.shape, device=DEV)
    grads = torch.ops.aten.convolution_backward(gy, x, w, *conv, [True, True, False])[:2]
    with FakeTensorMode() as mode:
        fx, fw, fgy = (mode.from_tensor(t) for t in (x, w, gy))
        fy = torch.ops.aten.convolution(fx, fw, *conv)
        fgrads = torch.ops.aten.convolution_backward(fgy, fx, fw, *conv, [True, True, False])[:2]

    def strides(t):  # size-1 dims' strides do not matter (nor does Inductor check them)
        return [s for s, n in zip(t.stride(), t.shape) if n > 1]

    want = cl if (x_cl or w_cl) and not (k == 1 and w_cl and not x_cl) else torch.contiguous_format
    assert y.is_contiguous(memory_format=want)
    for real, fake in zip((y, *grads), (fy, *fgrads)):
        assert real.shape == fake.shape and strides(real) == strides(fake)


@pytest.mark.parametrize("fmt", [torch.contiguous_format, torch.channels_last], ids=["nchw", "cl"])
def test_cnn_trains_compiled(fmt):
    """A ResNet-style block (convolutions, batch norm, pooling) under bf16 autocast,
    compiled whole, as eager privateuseone."""
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(3, 2, 1), nn.Conv2d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
        nn.ReLU(), nn.Conv2d(16, 32, 1, bias=False), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(32, 10),
    ).to(memory_format=fmt)  # fmt: skip
    x = torch.randn(4, 3, 32, 32).to(memory_format=fmt)
    y = torch.randint(0, 10, (4,))
    losses = {}
    for compiled in (False, True):
        m = copy.deepcopy(model).to(DEV)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def fwd_bwd():
            with torch.autocast(DEV, dtype=torch.bfloat16):
                loss = F.cross_entropy(m(x.to(DEV)), y.to(DEV))
            loss.backward()
            return loss

        step = torch.compile(fwd_bwd) if compiled else fwd_bwd
        seq = []
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            seq.append(step().item())
            opt.step()
        losses[compiled] = seq
    assert all(abs(a - b) < 2e-2 for a, b in zip(losses[True], losses[False])), losses
    assert losses[True][-1] < losses[True][0]


def test_dynamic_shapes_one_graph():
    """dynamic=True: one compiled graph serves every batch size."""
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32)
    ).to(DEV)
    compiled = torch.compile(model, dynamic=True)
    counters.clear()
    for n in (3, 5, 9, 17):
        x = torch.randn(n, 16, device=DEV)
        torch.testing.assert_close(compiled(x).cpu(), model(x).cpu(), **TOL)
    assert counters["stats"]["unique_graphs"] == 1
