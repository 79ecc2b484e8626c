"""The one place where this library launches Triton kernels.

On a driver whose device memory is host-addressable (the host driver, not
protected), each device tensor argument is replaced by a zero-copy CPU alias
(`torch_ext._C._host_alias`) so the interpreter reads and writes it in place.
Otherwise (CUDA, or protected host memory, where the interpreter stages its
own copies) tensors pass unchanged.
"""

import sys
import threading
import torch

from ..backends import spec
from . import _symbolic


def _c_ext():
    return sys.modules.get("torch_ext._C")


def _aliaser():
    c_ext = _c_ext()
    if c_ext is None or not hasattr(c_ext, "_driver_host_addressable"):
        return None
    if not c_ext._driver_host_addressable():
        return None
    return c_ext._host_alias


def _map_arg(arg, alias, storages):
    if not (isinstance(arg, torch.Tensor) and arg.device.type == "privateuseone"):
        return arg
    # Alias the whole storage once per launch and view into it: arguments that
    # share a storage then share one CPU storage too (the interpreter groups
    # arguments by storage and expects each to cover all of them).
    storage = arg.untyped_storage()
    numel, rem = divmod(storage.nbytes(), arg.element_size())
    if rem:
        return alias(arg)
    key = (storage.data_ptr(), arg.dtype)
    whole = storages.get(key)
    if whole is None:
        whole = alias(arg.as_strided((numel,), (1,), 0))
        storages[key] = whole
    return whole.as_strided(arg.size(), arg.stride(), arg.storage_offset())


# Element types Triton kernels can take (complex, quantized and float8 cannot).
_TRITON_DTYPES = frozenset(
    {
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.int8,
        torch.uint8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
    }
)


def _check_dtypes(kernel, args, kwargs):
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor) and a.dtype not in _TRITON_DTYPES:
            name = getattr(kernel, "__name__", None) or getattr(
                getattr(kernel, "fn", None), "__name__", "kernel"
            )
            raise NotImplementedError(
                f"torch_ext: {name} does not support dtype {a.dtype} on privateuseone "
                f"(Triton kernels take {', '.join(sorted(str(d)[6:] for d in _TRITON_DTYPES))})"
            )


_driver_setup = None


def _setup():
    """(aliaser or None, launch lock or None, plan recorder or None) of the
    active driver: fixed once the extension is loaded, so looked up once
    rather than per launch. The recorder (host driver) reports launches to
    the launch-plan layer (csrc/launch/Plan.h) while it records a call; on
    the cuda driver Triton's launcher reports them instead."""
    global _driver_setup
    if _driver_setup is not None:
        return _driver_setup
    c_ext = _c_ext()
    record = None
    if c_ext is not None and hasattr(c_ext, "_plan_recording") and c_ext._driver_name() == "host":
        record = c_ext
    setup = (_aliaser(), spec("launch_lock"), record)
    if c_ext is not None:
        _driver_setup = setup
    return setup


# Kernels launched through the Python path since import; `launches()` adds those that
# launch plans replayed from C++ (_C._plan_stats()["launched"]), on either driver.
launch_count = 0


def launches() -> int:
    """Kernels launched since import, by the Python path and by plan replays."""
    c_ext = _c_ext()
    replayed = c_ext._plan_stats()["launched"] if hasattr(c_ext, "_plan_stats") else 0
    return launch_count + replayed


def launch(kernel, grid, *args, philox=None, **kwargs):
    """kernel[grid](*args, **kwargs), with device tensors made host-visible.

    philox: for a kernel that takes a Philox seed and offset from
    `random.philox_draw`, {parameter name: its mark} (the draw's `marks`), so
    that a launch plan replaying this launch passes a fresh draw."""
    global launch_count
    if getattr(_local, "compile_only", False):
        return _compile(kernel, grid, args, kwargs)
    launch_count += 1
    if any(type(a) is CallNumber for a in args):
        args, philox = _take_numbers(kernel, args, philox)
    grid_syms = None
    if _symbolic.has_syms(grid, args, kwargs):  # sizes as expressions (ops/_symbolic.py)
        grid, args, kwargs, grid_syms, marks = _symbolic.launch_args(kernel, grid, args, kwargs)
        if marks:
            philox = {**(philox or {}), **{n: (_SYM_MARK, e) for n, e in marks.items()}}
    if _profiling():  # a named range under the aten op, for torch_ext.profiler
        with torch.profiler.record_function(f"triton:{_name(kernel)}"):
            return _launch(kernel, grid, args, kwargs, philox, grid_syms)
    return _launch(kernel, grid, args, kwargs, philox, grid_syms)


_profiling = torch._C._autograd._profiler_enabled
_local = threading.local()  # compile_only: this thread's launches only compile


class compiling_only:
    """Inside, this thread's launch() compiles its kernel for the launch's arguments
    (Triton's `warmup`) and runs nothing, counts nothing and records nothing: tuning
    compiles its candidates side by side (ops/_tune.py) before timing them one by one."""

    def __enter__(self):
        self.prev = getattr(_local, "compile_only", False)
        _local.compile_only = True
        return self

    def __exit__(self, *exc):
        _local.compile_only = self.prev


def compiling() -> bool:
    """Whether this thread's launches only compile (compiling_only)."""
    return getattr(_local, "compile_only", False)


def _compile(kernel, grid, args, kwargs):
    if _symbolic.has_syms(grid, args, kwargs):
        grid, args, kwargs, _, _ = _symbolic.launch_args(kernel, grid, args, kwargs)
    args = tuple(float(a) if type(a) is CallNumber else a for a in args)
    alias = _setup()[0]
    if alias is not None:
        storages = {}
        args = tuple(_map_arg(a, alias, storages) for a in args)
        kwargs = {k: _map_arg(v, alias, storages) for k, v in kwargs.items()}
    return kernel.warmup(*args, grid=grid, **kwargs)


def _name(kernel):
    return getattr(getattr(kernel, "fn", kernel), "__name__", "kernel")


class _Slot:
    """Where a recorded launch's tensor argument goes at replay."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __eq__(self, other):
        return type(other) is _Slot and self.index == other.index

    def __hash__(self):
        return hash(self.index)


class _Philox:
    """Where a recorded launch's Philox seed (which 0) or offset (1) goes, or
    (which 2) per-call number `ordinal`, or (which 3) the value of size expression
    `ordinal` (ops/_symbolic.py)."""

    __slots__ = ("which", "ordinal")

    def __init__(self, which, ordinal):
        self.which, self.ordinal = which, ordinal

    def __eq__(self, other):  # recordings of one shape class compare their launches
        return type(other) is _Philox and (self.which, self.ordinal) == (other.which, other.ordinal)

    def __hash__(self):
        return hash((self.which, self.ordinal))


# ---- per-call numbers ---------------------------------------------------------
# An op declared `@kernel(..., numbers=(i, ...))` has the floats of those arguments
# left out of its launch-plan key: its Python passes each to a kernel as a
# CallNumber (call_numbers), and a replay reads the value from the call's arguments
# (csrc/launch/PlanKey.h). The recording fails unless every float of them reached a
# launch that way; a value computed with (1 / x) or branched on must not be declared.


class CallNumber(float):
    """A float argument `arg` (element `elem` of a list; -1: the argument itself) of
    the op running now, passed to a kernel as it is."""

    __slots__ = ("arg", "elem")

    def __new__(cls, value=0.0, arg=-1, elem=-1):
        self = super().__new__(cls, value)
        self.arg, self.elem = arg, elem
        return self


def call_numbers(values, arg):
    """The numbers of argument `arg` (a list of them, or one) as CallNumbers; other
    types (ints, bools: in the key) are returned as they are."""
    if isinstance(values, (list, tuple)):
        return [CallNumber(v, arg, i) if type(v) is float else v for i, v in enumerate(values)]
    return CallNumber(values, arg, -1) if type(values) is float else values


_NUMBER_MARK = 2  # a mark's `which` for a per-call number (0, 1: a Philox seed, offset)
_SYM_MARK = 3  # and for an int that is an expression over the call's sizes


def _take_numbers(kernel, args, philox):
    """The arguments with CallNumbers as plain floats (Triton takes those), and the
    marks: {parameter name: (2, ordinal)} beside the Philox ones while recording."""
    c_ext = _c_ext()
    names = arg_names(kernel)
    marks = dict(philox or {})
    plain = []
    for i, a in enumerate(args):
        if type(a) is CallNumber:
            if i < len(names) and c_ext is not None and hasattr(c_ext, "_plan_number"):
                ordinal = c_ext._plan_number(a.arg, a.elem)
                if ordinal >= 0:
                    marks[names[i]] = (_NUMBER_MARK, ordinal)
            a = float(a)
        plain.append(a)
    return tuple(plain), (marks or None)


def arg_names(kernel):
    return list(getattr(kernel, "arg_names", None) or getattr(kernel.fn, "arg_names", ()))


def _observe(c_ext, kernel, grid, args, kwargs, philox, grid_syms=None):
    tensors = []
    marks = []
    names = arg_names(kernel) if philox else []
    if grid_syms and any(g >= 0 for g in grid_syms):
        grid = tuple(_Philox(_SYM_MARK, e) if e >= 0 else g for g, e in zip(grid, grid_syms))
        marks += [(_SYM_MARK, e) for e in grid_syms if e >= 0]

    def slot(a, name):
        if name in philox:
            which, ordinal = philox[name]
            marks.append((which, ordinal))
            return _Philox(which, ordinal)
        if isinstance(a, torch.Tensor):
            tensors.append(a)
            return _Slot(len(tensors) - 1)
        return a

    philox = philox or {}
    args = tuple(slot(a, names[i] if i < len(names) else None) for i, a in enumerate(args))
    kwargs = {k: slot(v, k) for k, v in kwargs.items()}
    c_ext._plan_observe_host(kernel, grid, args, kwargs, tensors, _name(kernel), marks)


def same_recorded(a, b) -> bool:
    """Two recordings' launch arguments (or a callback's) are the same: values equal,
    tensors the same storage (a bounds-check flag is the ring's, whichever slot), without
    dispatching any op (C++ compares under its plan lock)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.device == b.device
            and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        )
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same_recorded, a, b))
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same_recorded(a[k], b[k]) for k in a)
        )
    return type(a) is type(b) and (a is b or a == b)


def replay_recorded(kernel, grid, args, kwargs, tensors, philox, numbers=(), syms=()):
    """A recorded launch, replayed by C++ on the host driver (`philox`: the
    replay's Philox draws, (seed, offset) each; `numbers`: the call's per-call
    numbers; `syms`: a size-generic plan's expressions at this call; counted in
    _C._plan_stats())."""

    def fill(a):
        if isinstance(a, _Slot):
            return tensors[a.index]
        if isinstance(a, _Philox):
            if a.which == _NUMBER_MARK:
                return numbers[a.ordinal]
            if a.which == _SYM_MARK:
                return syms[a.ordinal]
            return philox[a.ordinal][a.which]
        return a

    if isinstance(grid, tuple):
        grid = tuple(fill(g) for g in grid)
    _launch(kernel, grid, tuple(fill(a) for a in args), {k: fill(v) for k, v in kwargs.items()})


# {parameter name: (which, ordinal)} of the launch in progress, and its grid's size
# expressions (-1: none; ops/_symbolic.py), for the cuda driver's launcher
# (backends/cuda/triton_driver.py) while a plan records.
pending_philox = None
pending_grid = None


def recording():
    """Whether the launch-plan layer records the op running now."""
    c_ext = _c_ext()
    return c_ext is not None and hasattr(c_ext, "_plan_recording") and c_ext._plan_recording()


class paused:
    """Work done inside is not part of the op being recorded (if any)."""

    def __enter__(self):
        c_ext = _c_ext()
        self.c_ext = c_ext if c_ext is not None and hasattr(c_ext, "_plan_pause") else None
        if self.c_ext is not None:
            self.c_ext._plan_pause(True)

    def __exit__(self, *exc):
        if self.c_ext is not None:
            self.c_ext._plan_pause(False)


def after(fn, args, name, interval_s=0.0):
    """While recording: replays of this op call fn(*args) at this point; with an
    interval, no more often than once per `interval_s` seconds of host time (over all
    such calls), and otherwise not at all (no GIL taken)."""
    _c_ext()._plan_observe_callback(fn, tuple(args), name, interval_s)


def persistent(tensor):
    """Registers device memory that outlives every launch plan (pointers into
    it are kept as they are in plans)."""
    c_ext = _c_ext()
    if c_ext is not None and hasattr(c_ext, "_plan_persistent"):
        c_ext._plan_persistent(tensor)


def persistent_zeros(shape, dtype, device):
    """A zeroed device tensor that outlives every launch plan (registered persistent).
    Zeroed by a host-to-device copy, not by a kernel: the first use may come from a
    thread of tuning's precompile (`compiling_only`), where kernels compile and do not
    run; a fill there left the split-K arrival counters holding whatever the memory
    held (session 22: NaN and silently wrong products on an H200)."""
    with paused():  # not part of the op being recorded, if any
        t = torch.zeros(shape, dtype=dtype).to(device)
    if t.device.type == "privateuseone":
        persistent(t)
    return t


# Arrival counters of split reductions (split-K products, batch norm's statistics): the
# last program of a group to arrive merges the group's partials and re-arms its counter,
# so they are zero between launches. One set per family and device, outliving every plan,
# made once whichever thread asks first (tuning compiles candidates in threads).
ARRIVALS = 1 << 14
_arrivals = {}
_arrivals_lock = threading.Lock()


def arrival_counters(family, device):
    """ARRIVALS int32 counters of `family` (a name) on `device`, zero between launches."""
    t = _arrivals.get((family, device))
    if t is None:
        with _arrivals_lock:
            t = _arrivals.get((family, device))
            if t is None:
                t = _arrivals[(family, device)] = persistent_zeros(ARRIVALS, torch.int32, device)
    return t


def unreplayable(why):
    """Keeps the op being recorded on Python: it does something a launch plan
    cannot repeat (`why` names it in _C._plan_stats()["reasons"])."""
    c_ext = _c_ext()
    if c_ext is not None and hasattr(c_ext, "_plan_recording") and c_ext._plan_recording():
        c_ext._plan_unreplayable(why)


# Dynamo's frame hook (torch.compile), set while an op runs eagerly inside a compiled
# function (its backward after a graph break): off while Triton binds, compiles and
# launches, whose frames (the binder Triton makes with exec) are not user code.
_set_eval_frame = getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None)
_set_eval_frame = getattr(_set_eval_frame, "set_eval_frame", None)


def _launch(kernel, grid, args, kwargs, philox=None, grid_syms=None):
    hook = _set_eval_frame(None) if _set_eval_frame is not None else None
    try:
        return _launch_unhooked(kernel, grid, args, kwargs, philox, grid_syms)
    finally:
        if hook is not None:
            _set_eval_frame(hook)


def _launch_unhooked(kernel, grid, args, kwargs, philox, grid_syms):
    global pending_philox, pending_grid
    _check_dtypes(kernel, args, kwargs)
    alias, lock, record = _setup()
    recording = record is not None and record._plan_recording()
    if recording:
        _observe(record, kernel, grid, args, kwargs, philox, grid_syms)
        record._plan_pause(True)  # what the launch itself does is part of its step
    pending_philox = philox
    pending_grid = grid_syms
    tuned = getattr(kernel, "cache", None) if hasattr(kernel, "configs") else None
    before = len(tuned) if tuned is not None else 0
    try:
        if alias is not None:
            storages = {}
            args = tuple(_map_arg(a, alias, storages) for a in args)
            kwargs = {k: _map_arg(v, alias, storages) for k, v in kwargs.items()}
        if lock is None:
            return kernel[grid](*args, **kwargs)
        with lock:
            return kernel[grid](*args, **kwargs)
    finally:
        pending_philox = pending_grid = None
        if recording:
            record._plan_pause(False)
        if tuned is not None and len(tuned) != before:
            # The autotuner benchmarked configs: those launches are not the
            # op's, so this call's recording is not kept (the next one is).
            retry_recording()


def retry_recording():
    """The op being recorded (if any) is not kept: its launches included some that
    are not the op's (tuning); the next call with its key records."""
    c_ext = _c_ext()
    if c_ext is not None and hasattr(c_ext, "_plan_retry"):
        c_ext._plan_retry()


# Plain-Python grid helpers: triton.cdiv / next_power_of_2 are JIT-callable
# wrappers that cost microseconds per call on the launch path.
def cdiv(a, b):
    return -(-a // b)


def next_pow2(n):
    return 1 << (n - 1).bit_length() if n > 1 else 1


def pow2_at_most(n, cap):
    """min(cap, next_pow2(n)) for a power-of-two cap, deciding on n >= cap first."""
    return cap if n >= cap else next_pow2(n)
