"""PyTorch's foreach OpInfo samples (every `_foreach_*` OpInfo: unary, binary,
pointwise, reductions, lerp/copy/zero/...) through the dispatcher on
privateuseone (fallback = error) against CPU, functional and in place."""

import pytest
import torch
from torch.testing._internal.common_methods_invocations import (
    foreach_binary_op_db,
    foreach_other_op_db,
    foreach_pointwise_op_db,
    foreach_reduce_op_db,
    foreach_unary_op_db,
)
from torch.utils._pytree import tree_map

from helpers import DEV

INFOS = [
    i
    for i in foreach_unary_op_db
    + foreach_binary_op_db
    + foreach_pointwise_op_db
    + foreach_reduce_op_db
    + foreach_other_op_db
    if i.name != "_foreach_mm"  # matrix products: not a multi-tensor kernel
]
SAMPLES = 2


def _clone(t):
    return t.clone() if isinstance(t, torch.Tensor) else t


def _dev(t):
    return t.to(DEV) if isinstance(t, torch.Tensor) else t


# Each OpInfo with the dtypes the CPU itself takes among float32 and int64.
CASES = [
    pytest.param(info, dtype, id=f"{info.name}-{tag}")
    for info in INFOS
    for dtype, tag in ((torch.float32, "f32"), (torch.int64, "i64"))
    if dtype in info.supported_dtypes("cpu")
]


@pytest.mark.parametrize("info,dtype", CASES)
def test_foreach_opinfo(info, dtype):
    checked = 0
    for s in list(info.sample_inputs("cpu", dtype, num_input_tensors=[3]))[:SAMPLES]:
        for variant, fn in (("functional", info.op), ("inplace", info.inplace_variant)):
            if fn is None:
                continue
            args = (s.input, *s.args)
            ref_args = tree_map(_clone, args)
            dev_args = tree_map(_dev, args)
            try:
                ref = fn(*ref_args, **s.kwargs)
            except (RuntimeError, TypeError, ValueError, NotImplementedError):
                # the CPU refuses the sample (e.g. frac of integers): so do we
                with pytest.raises((RuntimeError, TypeError, ValueError, NotImplementedError)):
                    fn(*dev_args, **tree_map(_dev, s.kwargs))
                checked += 1
                continue
            res = fn(*dev_args, **tree_map(_dev, s.kwargs))
            got = res if variant == "functional" else dev_args[0]
            exp = ref if variant == "functional" else ref_args[0]
            assert len(got) == len(exp)
            for a, b in zip(got, exp):
                assert a.device.type == DEV and a.dtype == b.dtype
                torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5, equal_nan=True)
            checked += 1
    assert checked, f"no sample of {info.name} ran"
