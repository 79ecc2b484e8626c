"""Bad input on privateuseone fails as it does on CPU: PyTorch's OpInfo `error_inputs`
(inputs each op must reject, with the error type and a pattern of its message) for
every OpInfo test_opinfo.py runs. Each must raise the same type of error with a
message the pattern matches, and no internal error (Triton's interpreter, a Python
unpacking error) may show through. Error inputs that CPU itself does not reject as
declared (some are written for CUDA) are left out; so are ops left with none."""

import re

import pytest
import torch
from torch.utils._pytree import tree_map

from helpers import DEV
from test_opinfo import _BY_NAME, OPS

# What an error raised by our code must never show: the internals that raised it.
INTERNALS = ("InterpreterError", "Traceback", "not enough values to unpack", "index out of range")


def _raised(fn):
    try:
        out = fn()
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor) and t.device.type == "privateuseone":
                # the cuda driver reports an out-of-range index at a later check or at
                # the latest here, as CUDA its device-side errors (ops/_bounds.py)
                torch.privateuseone.synchronize()
    except Exception as e:  # noqa: BLE001 - the error is the result
        return e
    return None


def _on_cpu(op):
    """The op's error inputs that CPU rejects as declared (some are CUDA's alone)."""
    picked = []
    for ei in op.error_inputs("cpu"):
        s = ei.sample_input
        e = _raised(lambda: op(s.input, *s.args, **s.kwargs))
        if isinstance(e, ei.error_type) and re.search(ei.error_regex, str(e)):
            picked.append((ei, e))
    return picked


CASES = [
    pytest.param(_BY_NAME[n], id=n)
    for n in OPS
    if n in _BY_NAME and _BY_NAME[n].error_inputs_func is not None and _on_cpu(_BY_NAME[n])
]


def _move(tree):
    """CPU tensors and device arguments to privateuseone; other devices' (meta) stay.
    Tensors that share memory share it there too, as the same views of one copied
    storage (an out= tensor overlapping an input is what some error inputs are)."""
    storages = {}

    def move(x):
        if isinstance(x, torch.Tensor) and x.device.type == "cpu":
            st = x.untyped_storage()
            if st.data_ptr() not in storages:
                raw = torch.empty(0, dtype=torch.uint8).set_(st)
                storages[st.data_ptr()] = raw.to(DEV).untyped_storage()
            view = torch.empty(0, dtype=x.dtype, device=DEV)
            return view.set_(storages[st.data_ptr()], x.storage_offset(), x.shape, x.stride())
        if isinstance(x, torch.device) and x.type == "cpu" or x == "cpu":
            return torch.device(DEV)
        return x

    return tree_map(move, tree)


@pytest.mark.parametrize("op", CASES)
def test_error_inputs_fail_as_on_cpu(op):
    for ei, cpu in _on_cpu(op):
        s = ei.sample_input
        args, kwargs = (s.input, *s.args), s.kwargs
        dargs, dkwargs = _move((args, kwargs))  # together: an out= may alias an input
        ours = _raised(lambda: op(*dargs, **dkwargs))
        what = f"{op.name} on {s}: CPU raised {type(cpu).__name__}({cpu})"
        assert ours is not None, f"{what}; privateuseone raised nothing"
        assert isinstance(ours, ei.error_type), f"{what}; ours {type(ours).__name__}({ours})"
        assert re.search(ei.error_regex, str(ours)), f"{what}; ours: {ours}"
        assert not any(i in str(ours) for i in INTERNALS), f"{what}; ours: {ours}"
