"""torch.compile's default backend, Inductor, on `privateuseone`.

`torch.compile(model)` lowers a graph of privateuseone tensors with Inductor:
pointwise and reduction nodes fuse into generated kernels, and what Inductor
calls as an external kernel (matrix products, convolutions, attention) runs our
own ops. What Inductor generates depends on the driver:

- cuda: Triton kernels, compiled for the GPU and launched on the current
  privateuseone stream (the raw CUstream, in the primary context our allocator's
  memory lives in), the code torch.compile generates for `cuda` tensors.
- host: C++ kernels (Inductor's CPU code generator), since the host driver's
  memory is host memory.

Inductor finds a device's code generators and runtime through three
registries: `register_interface_for_device` (dynamo: current device, streams,
events, properties), `register_device_op_overrides` (the generated wrapper's
stream and guard lines) and `register_backend_for_device` (scheduling and
wrapper code generators). Importing Inductor costs more than a second, so
`install()` registers when torch._dynamo's device interface and Inductor's
graph module are first imported (a post-import hook), not at `import torch_ext`.

What torch keys on the device *type* rather than on those registries is adapted here
(docs/design.md, "torch.compile: Inductor on privateuseone"):
- cuda driver: Triton picks its compiler by the kernel's device properties' type,
  so a privateuseone kernel's properties say "cuda" (`_adapt_properties`); Inductor
  then compiles and launches it as a CUDA kernel.
- host driver: the scheduler's `node.is_cpu()` and the code generators'
  `get_current_backend()` answer for privateuseone as for the CPU
  (`_adapt_scheduler_nodes`).
- dynamo: our runtime modules and Triton are skipped as user code
  (`_skip_runtime_frames`; ops/_launch.py also launches with dynamo's hook off).
- FakeTensor: privateuseone convolutions are laid out by our rule, which Inductor
  asserts on the real outputs (`_adapt_fake_convolution`).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import sys
from typing import Any, Callable

import torch

from torch_ext import _C
from torch_ext import device as _device

_TYPE = "privateuseone"


def get_raw_stream(device_index: int) -> int:
    """The raw handle (a CUstream on the cuda driver) of the device's current
    stream: what generated code passes to its kernels."""
    stream = torch.accelerator.current_stream(device_index)
    return _C._stream_handle(stream.device_index, stream.stream_id)


def _cuda() -> bool:
    return _C._driver_name() == "cuda"


# --- dynamo's device interface ---------------------------------------------------


def _interface_class() -> type:
    from torch._dynamo.device_interface import DeviceInterface

    class _Event(torch.Event):
        def __new__(cls, *args: Any, **kwargs: Any) -> torch.Event:
            return _device.Event(*args, **kwargs)

    class PrivateUse1Interface(DeviceInterface):
        device = _device.device
        Event = _Event
        Stream = _device.Stream

        class Worker:
            @staticmethod
            def set_device(device: int) -> None:
                _device.set_device(device)

            @staticmethod
            def current_device() -> int:
                return _device.current_device()

            @staticmethod
            def get_device_properties(device: Any = None) -> Any:
                return _device.get_device_properties(device)

        current_device = staticmethod(_device.current_device)
        set_device = staticmethod(_device.set_device)
        device_count = staticmethod(_device.device_count)
        is_available = staticmethod(_device.is_available)
        stream = staticmethod(_device.stream)
        current_stream = staticmethod(_device.current_stream)
        set_stream = staticmethod(_device.set_stream)
        synchronize = staticmethod(_device.synchronize)
        memory_allocated = staticmethod(_device.memory_allocated)
        get_raw_stream = staticmethod(get_raw_stream)

        @staticmethod
        def exchange_device(device: int) -> int:
            previous = _device.current_device()
            if device >= 0 and device != previous:
                _device.set_device(device)
            return previous

        maybe_exchange_device = exchange_device

        @staticmethod
        def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
            _device.set_stream(
                torch.Stream(
                    stream_id=stream_id, device_index=device_index, device_type=device_type
                )
            )

        @staticmethod
        def get_compute_capability(device: Any = None) -> Any:
            if not _cuda():
                return ""
            major, minor = _device.get_device_capability(device)
            return major * 10 + minor

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return _device.is_bf16_supported(including_emulation)

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return _cuda()

    return PrivateUse1Interface


def _register_interface() -> None:
    from torch._dynamo.device_interface import register_interface_for_device

    interface = _interface_class()
    register_interface_for_device(_TYPE, interface)
    for index in range(_device.device_count()):
        register_interface_for_device(f"{_TYPE}:{index}", interface)


# Our kernels' Python, called under ops, and Triton (its compiler and launcher on the
# cuda driver, its interpreter on the host). Not the modules users call in models
# (torch_ext.fused, demo, device, distributed): dynamo traces those.
_RUNTIME_MODULES = (
    "torch_ext.ops",
    "torch_ext.backends",
    "torch_ext._registry",
    "torch_ext._fallback",
    "torch_ext.compile_cache",
    "triton",
)


def _skip_runtime_frames() -> None:
    """Ops run eagerly inside a compiled function (its backward after a graph
    break, an op on its first call) call our kernels' Python with dynamo's frame
    hook still set: dynamo is told to run those frames as they are instead of
    tracing them as user code. Where the installed torch has the list, a call
    from traced user code still inlines them (as dynamo does for `copy`)."""
    from torch._dynamo import trace_rules

    inline_when_called = getattr(trace_rules, "BUILTIN_INLINE_WHEN_CALLED", None)
    for name in _RUNTIME_MODULES:
        before = len(trace_rules.SKIP_DIRS)
        trace_rules.add(name)
        if inline_when_called is not None:
            inline_when_called.update(trace_rules.SKIP_DIRS[before:])


# --- Inductor: the wrapper's lines, the code generators ---------------------------


def _op_overrides() -> Any:
    from torch._inductor.codegen.common import DeviceOpOverrides

    class PrivateUse1OpOverrides(DeviceOpOverrides):
        def import_get_raw_stream_as(self, name: str) -> str:
            return f"from torch_ext.inductor import get_raw_stream as {name}"

        def set_device(self, device_idx: int) -> str:
            return f"torch.privateuseone.set_device({device_idx})"

        def synchronize(self) -> str:
            return "torch.privateuseone.synchronize()"

        def device_guard(self, device_idx: int) -> str:
            return f"torch.privateuseone.device({device_idx})"

    return PrivateUse1OpOverrides()


def _host_wrapper() -> type:
    """The Python wrapper, calling C++ kernels on privateuseone tensors as it
    does on CPU tensors (its stock version calls only Triton kernels on devices
    other than the CPU)."""
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen

    class HostWrapper(PythonWrapperCodegen):
        @staticmethod
        def create(
            is_subgraph: bool,
            subgraph_name: Any,
            parent_wrapper: Any,
            partition_signatures: Any = None,
        ) -> PythonWrapperCodegen:
            if is_subgraph:
                return SubgraphPythonWrapperCodegen(
                    subgraph_name, parent_wrapper, partition_signatures
                )
            return HostWrapper()

        def _generate_kernel_call_helper(
            self, kernel_name: str, call_args: Any, *, triton: bool = True, **kwargs: Any
        ) -> None:
            if not triton:
                self.writeline(self.wrap_kernel_call(kernel_name, call_args))
                return
            super()._generate_kernel_call_helper(kernel_name, call_args, triton=triton, **kwargs)

    return HostWrapper


def _register_backend() -> None:
    from torch._inductor.codegen import common

    common.register_device_op_overrides(_TYPE, _op_overrides())
    if _cuda():
        from torch._inductor.codegen.triton import TritonScheduling
        from torch._inductor.codegen.wrapper import PythonWrapperCodegen

        common.register_backend_for_device(_TYPE, TritonScheduling, PythonWrapperCodegen)
        _adapt_properties()
    else:
        from torch._inductor.codegen.cpp import CppScheduling

        common.register_backend_for_device(_TYPE, CppScheduling, _host_wrapper())
        _adapt_scheduler_nodes()


def _adapt_properties() -> None:
    """cuda driver: a privateuseone kernel's device properties say "cuda", so
    that Triton compiles it for the GPU (its target is the properties' type)."""
    from torch._inductor.runtime import hints

    create = hints.DeviceProperties.create.__func__
    if getattr(create, "_torch_ext", False):
        return

    @functools.wraps(create)
    def create_for_device(cls: type, device: torch.device) -> Any:
        props = create(cls, device)
        if device.type == _TYPE:
            props = props._replace(type="cuda")
        return props

    create_for_device._torch_ext = True
    hints.DeviceProperties.create = classmethod(create_for_device)


def _adapt_scheduler_nodes() -> None:
    """host driver: privateuseone nodes count as CPU nodes, whose memory and C++
    code generator they share: for the scheduler's `is_cpu()`, and for the
    backend name the code generators ask by device type (`get_current_backend`,
    else "triton" for any device but the CPU's)."""
    from torch._inductor import scheduler, utils
    from torch._inductor.codegen import common

    backend_of = utils.get_current_backend
    if not getattr(backend_of, "_torch_ext", False):

        @functools.wraps(backend_of)
        def backend_of_device(device_type: Any = None) -> str:
            if device_type is None:
                from torch._inductor.virtualized import V

                device_type = V.graph.get_current_device_or_throw().type
            return backend_of("cpu" if device_type == _TYPE else device_type)

        backend_of_device._torch_ext = True
        for module in (utils, common, scheduler):
            module.get_current_backend = backend_of_device

    is_cpu = scheduler.BaseSchedulerNode.is_cpu
    if getattr(is_cpu, "_torch_ext", False):
        return

    @functools.wraps(is_cpu)
    def is_cpu_or_host(self: Any) -> bool:
        device = self.get_device()
        return device is not None and device.type in ("cpu", _TYPE)

    is_cpu_or_host._torch_ext = True
    scheduler.BaseSchedulerNode.is_cpu = is_cpu_or_host


# --- fake tensors: the convolution's layout ---------------------------------------


def _adapt_fake_convolution() -> None:
    """FakeTensor lays a convolution's output out by ATen's rule for its backend, for
    privateuseone the "overrideable" one (contiguous unless the tensors are XPU's).
    Ours, as CUDA's, follow the input's or the weight's channels_last
    (ops/convolution.py `in_format`); Inductor asserts the fake layout on the real
    outputs, so the fake outputs of privateuseone convolutions take our rule."""
    from torch._subclasses import fake_impls

    from torch_ext.ops.conv_igemm import conv_format

    aten = torch.ops.aten
    # (op, position of input, of weight, outputs to lay out)
    for op, at_input, at_weight, laid_out in (
        (aten.convolution.default, 0, 1, None),
        (aten.convolution_backward.default, 1, 2, (0, 1)),
    ):
        stock = fake_impls.op_implementations_dict.get(op)
        if stock is None or getattr(stock, "_torch_ext", False):
            continue

        def fake_conv(fake_mode, func, *args, _stock=stock, _at=(at_input, at_weight),
                      _laid_out=laid_out, **kwargs):  # fmt: skip
            out = _stock(fake_mode, func, *args, **kwargs)
            names = ("input", "weight")
            x, w = (kwargs[n] if n in kwargs else args[i] for n, i in zip(names, _at))
            if x.fake_device.type != _TYPE:
                return out
            fmt = conv_format(x, w)
            with fake_mode:
                if _laid_out is None:
                    return (
                        out
                        if out.is_contiguous(memory_format=fmt)
                        else out.contiguous(memory_format=fmt)
                    )
                out = list(out)
                for i in _laid_out:
                    if out[i] is not None and not out[i].is_contiguous(memory_format=fmt):
                        out[i] = out[i].contiguous(memory_format=fmt)
                return tuple(out)

        fake_conv._torch_ext = True
        fake_impls.op_implementations_dict[op] = fake_conv


# --- registration when the modules are first imported -----------------------------

_HOOKS: dict[str, Callable[[], None]] = {
    "torch._subclasses.fake_impls": _adapt_fake_convolution,
    "torch._dynamo.trace_rules": _skip_runtime_frames,
    "torch._dynamo.device_interface": _register_interface,
    "torch._inductor.graph": _register_backend,
}


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs a hook right after a module in _HOOKS has been imported."""

    def __init__(self) -> None:
        self._finding: set[str] = set()
        self._loaders: dict[str, Any] = {}

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in _HOOKS or name in self._finding:
            return None
        self._finding.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._finding.discard(name)
        if spec is None or spec.loader is None:
            return None
        self._loaders[name] = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: Any) -> Any:
        return self._loaders[spec.name].create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loaders[module.__name__].exec_module(module)
        _HOOKS[module.__name__]()


_installed = False


def install() -> None:
    """Registers privateuseone with dynamo and Inductor: now for the modules
    already imported, on their first import for the others."""
    global _installed
    if _installed:
        return
    _installed = True
    pending = False
    for name, hook in _HOOKS.items():
        if name in sys.modules:
            hook()
        else:
            pending = True
    if pending:
        sys.meta_path.insert(0, _AfterImport())
