"""A dtype an op does not take fails as it does on CUDA: for every OpInfo test_opinfo.py
runs and each tested dtype outside the OpInfo's CUDA dtypes, a sample that CPU rejects
must be rejected on privateuseone too (a RuntimeError, NotImplementedError among them,
whose message shows no internal error: the manifest's `dtypes:`, csrc/aten/DtypeGuard.h,
and the kernels' own checks), not computed. The dtypes we take beyond CUDA's are listed
below with their reason, and must run."""

import pytest
import torch

from test_opinfo import _BY_NAME, DTYPES, OPS
from test_opinfo_errors import INTERNALS, _move, _raised

HALF = (torch.float16, torch.bfloat16)
INTS = (torch.int32, torch.int64)
# Dtypes we compute where CUDA's kernels refuse (and CPU's too), by design:
EXTENDED = {
    # float16/bfloat16 special functions, linear algebra, distances and CTC: computed in
    # float32 by our kernels (CUDA has no half kernel for them)
    **{
        n: HALF
        for n in OPS
        if n.startswith("special.")
        and n not in ("special.i0e", "special.i1", "special.i1e")
        or n in ("cdist", "nn.functional.pdist", "nn.functional.ctc_loss", "cholesky")
        or n in ("linalg.tensorsolve", "linalg.solve_triangular", "linalg.lu")
        or n.startswith(("linalg.cholesky", "linalg.lu_factor"))
    },
    "histogram": (torch.float16,),  # counts in float32, as the float16 weights allow
    "histogramdd": (torch.float16,),
    "nn.functional.unfold": INTS,  # im2col is a gather: any element type
    "nn.functional.max_pool1d": INTS,  # a maximum: integers as max_pool2d's
    "masked.cumsum": (torch.bool,),  # cumsum promotes bool to int64 as on CPU
}

CASES = [pytest.param(_BY_NAME[n], id=n) for n in OPS if n in _BY_NAME]


def _first_sample(op, dtype):
    try:
        return next(iter(op.sample_inputs("cpu", dtype, requires_grad=False)), None)
    except Exception:  # noqa: BLE001 - no samples of a dtype the OpInfo never makes
        return None


@pytest.mark.parametrize("op", CASES)
def test_dtypes_cuda_refuses_are_refused(op):
    cuda = op.supported_dtypes("cuda")
    name = op.name if not op.variant_test_name else f"{op.name}.{op.variant_test_name}"
    for dtype in DTYPES:
        if dtype in cuda:
            continue
        s = _first_sample(op, dtype)
        if s is None:
            continue
        args, kwargs = (s.input, *s.args), s.kwargs
        cpu = _raised(lambda: op(*args, **kwargs))
        if cpu is None:
            continue  # CPU computes it too: not an error input
        dargs, dkwargs = _move((args, kwargs))
        ours = _raised(lambda: op(*dargs, **dkwargs))
        what = f"{name} {dtype}: CPU raised {type(cpu).__name__}({cpu})"
        if dtype in EXTENDED.get(name, ()):
            assert ours is None, f"{what}; ours, which takes it by design, raised {ours!r}"
            continue
        assert ours is not None, f"{what}; privateuseone computed it"
        assert isinstance(ours, (RuntimeError, type(cpu))), f"{what}; ours {ours!r}"
        assert not any(i in str(ours) for i in INTERNALS), f"{what}; ours: {ours}"


def test_dtypes_error_names_the_op_and_type():
    """The manifest's `dtypes:` guard: PyTorch's NotImplementedError and wording."""
    x = torch.ones(2, 4, dtype=torch.long).to("privateuseone")
    with pytest.raises(
        NotImplementedError, match="\"native_layer_norm\" not implemented for 'Long'"
    ):
        torch.nn.functional.layer_norm(x, (4,))
    with pytest.raises(NotImplementedError, match="\"remainder\" not implemented for 'Bool'"):
        torch.remainder(x.bool(), x.bool())
    y = torch.nn.functional.layer_norm(x.float(), (4,))  # the guard passes floats through
    assert y.device.type == "privateuseone" and torch.equal(y.cpu(), torch.zeros(2, 4))
