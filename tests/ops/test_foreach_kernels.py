"""Kernel-level tests of the multi-tensor family (foreach.py, foreach_ops.py,
optim.py, _multi_tensor.py): each wrapper against torch's own `_foreach_*`,
fused optimiser and AMP ops on CPU."""

import itertools

import pytest
import torch

from torch_ext.ops import _launch, _multi_tensor, optim
from torch_ext.ops._declare import KERNELS

from helpers import assert_kernel_close, force_spec, randn, to_ref

SHAPES = [(10,), (3, 4), (0,), (5, 1), ()]


def _lists(n, device, dtype=torch.float32, positive=False):
    torch.manual_seed(len(SHAPES) + n)
    out = []
    for k in range(n):
        lo = 0.5 if positive else None
        out.append(
            [randn(s, dtype, device, low=lo, high=2.0 if positive else None) for s in SHAPES]
        )
    return out


def _close(res, ref, **kw):
    assert len(res) == len(ref)
    for a, b in zip(res, ref):
        assert_kernel_close(a, b, **kw)


def _ref(lst):
    return [to_ref(t).clone() for t in lst]


BINARY = [
    ("add", "Scalar", lambda xs, ys: (xs, 1.5), {}),
    ("add", "List", lambda xs, ys: (xs, ys, 0.5), {"alpha": 0.5}),
    ("add", "ScalarList", lambda xs, ys: (xs, [0.1 * i for i in range(len(xs))]), {}),
    ("add", "Tensor", lambda xs, ys: (xs, torch.tensor(2.0), 3.0), {"alpha": 3.0}),
    ("sub", "List", lambda xs, ys: (xs, ys, 2.0), {"alpha": 2.0}),
    ("mul", "Scalar", lambda xs, ys: (xs, -2.0), {}),
    ("mul", "Tensor", lambda xs, ys: (xs, torch.tensor(0.25)), {}),
    ("div", "List", lambda xs, ys: (xs, ys), {}),
    ("div", "ScalarList", lambda xs, ys: (xs, [1.0 + i for i in range(len(xs))]), {}),
    ("clamp_min", "Scalar", lambda xs, ys: (xs, 0.1), {}),
    ("clamp_max", "List", lambda xs, ys: (xs, ys), {}),
    ("maximum", "List", lambda xs, ys: (xs, ys), {}),
    ("minimum", "ScalarList", lambda xs, ys: (xs, [0.0] * len(xs)), {}),
    ("pow", "Scalar", lambda xs, ys: (xs, 2.0), {}),
    ("pow", "List", lambda xs, ys: (xs, ys), {}),
]


@pytest.mark.parametrize("op,overload,make,kw", BINARY, ids=[f"{b[0]}.{b[1]}" for b in BINARY])
@pytest.mark.parametrize("variant", ["functional", "inplace", "out"])
def test_binary(op, overload, make, kw, variant, device):
    positive = op == "pow"
    xs, ys = _lists(2, device, positive=positive)
    args = make(xs, ys)
    ref_args = [_ref(a) if isinstance(a, list) and a and torch.is_tensor(a[0]) else a for a in args]
    ref_args = list(ref_args[: len(ref_args) - (1 if kw else 0)])
    ref = getattr(torch, f"_foreach_{op}")(*ref_args, **kw)
    if variant == "functional":
        res = KERNELS[f"foreach_{op}_{overload}"](*args)
    elif variant == "inplace":
        KERNELS[f"foreach_{op}__{overload}"](*args)
        res = xs
    else:
        res = [torch.empty_like(x) for x in xs]
        KERNELS[f"foreach_{op}_{overload}_out"](*args, res)
    _close(res, ref)


TERNARY = [
    ("addcmul", "Scalar", lambda n: 0.5),
    ("addcmul", "ScalarList", lambda n: [0.1 * i for i in range(n)]),
    ("addcdiv", "Scalar", lambda n: -0.5),
    ("addcdiv", "Tensor", lambda n: torch.arange(n, dtype=torch.float32)),
    ("lerp", "Scalar", lambda n: 0.3),
    ("lerp", "ScalarList", lambda n: [0.7] * n),
]


@pytest.mark.parametrize("op,overload,scal", TERNARY, ids=[f"{t[0]}.{t[1]}" for t in TERNARY])
def test_ternary(op, overload, scal, device):
    xs, ys, zs = _lists(3, device, positive=True)
    s = scal(len(xs))
    if op == "lerp":
        args, ref_args = (xs, ys, s), (_ref(xs), _ref(ys), s)
    else:
        args, ref_args = (xs, ys, zs, s), (_ref(xs), _ref(ys), _ref(zs), s)
    ref = getattr(torch, f"_foreach_{op}")(*ref_args)
    _close(KERNELS[f"foreach_{op}_{overload}"](*args), ref)
    KERNELS[f"foreach_{op}__{overload}"](*args)
    _close(xs, ref)


def test_lerp_list_and_pow_scalar_base(device):
    xs, ys, ws = _lists(3, device, positive=True)
    _close(
        KERNELS["foreach_lerp_List"](xs, ys, ws),
        torch._foreach_lerp(_ref(xs), _ref(ys), _ref(ws)),
    )
    _close(KERNELS["foreach_pow_ScalarAndTensor"](2.0, xs), torch._foreach_pow(2.0, _ref(xs)))


UNARY = "sqrt rsqrt neg abs exp log log2 reciprocal sign sigmoid sin tanh floor round frac".split()


@pytest.mark.parametrize("op", UNARY)
def test_unary(op, device):
    (xs,) = _lists(1, device, positive=op in ("sqrt", "rsqrt", "log", "log2"))
    ref = getattr(torch, f"_foreach_{op}")(_ref(xs))
    _close(KERNELS[f"foreach_{op}"](xs), ref, atol=1e-5, rtol=1e-5)
    KERNELS[f"foreach_{op}_"](xs)
    _close(xs, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("op", ["floor", "round", "abs", "neg", "sign"])
def test_unary_integers_stay_integers(op, device):
    xs = [torch.arange(-3, 4, device=device), torch.arange(5, dtype=torch.int32, device=device)]
    ref = getattr(torch, f"_foreach_{op}")([x.cpu() for x in xs])
    _close(KERNELS[f"foreach_{op}"](xs), ref)


def test_zero_and_copy(device):
    xs, ys = _lists(2, device)
    half = [y.to(torch.float16) for y in ys]
    KERNELS["foreach_copy_"](xs, half)
    _close(xs, [to_ref(h).float() for h in half])
    KERNELS["foreach_zero_"](xs)
    assert all(bool((to_ref(x) == 0).all()) for x in xs)


@pytest.mark.parametrize("ord", [2, 1, 3, 0, float("inf"), float("-inf")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_norm(ord, dtype, device):
    (xs,) = _lists(1, device, dtype)
    if ord in (float("inf"), float("-inf")):
        xs = [x for x in xs if x.numel()]
        with pytest.raises(RuntimeError, match="empty"):
            KERNELS["foreach_norm"]([randn((0,), dtype, device)], ord, None)
    ref = torch._foreach_norm(_ref(xs), ord)
    res = KERNELS["foreach_norm"](xs, ord, None)
    assert all(r.dtype == dtype and r.dim() == 0 for r in res)
    _close(res, ref, atol=1e-3, rtol=1e-3)
    wide = KERNELS["foreach_norm"](xs, ord, torch.float32)
    assert all(r.dtype == torch.float32 for r in wide)


def test_max(device):
    (xs,) = _lists(1, device)
    xs = [x for x in xs if x.numel()]
    _close(KERNELS["foreach_max"](xs), torch._foreach_max(_ref(xs)))


def test_mixed_dtypes_are_grouped(device):
    xs = [randn((4,), d, device) for d in (torch.float32, torch.float16, torch.float64)]
    ys = [randn((4,), torch.float32, device) for _ in xs]
    res = KERNELS["foreach_add_List"](xs, ys, 1.0)
    ref = torch._foreach_add([x.cpu() for x in xs], [y.cpu() for y in ys])
    assert [r.dtype for r in res] == [r.dtype for r in ref]
    _close(res, ref, atol=1e-3, rtol=1e-3)
    ints = [torch.arange(4, device=device), torch.arange(3, device=device)]
    res = KERNELS["foreach_div_Scalar"](ints, 2)
    assert all(r.dtype == torch.float32 for r in res)
    with pytest.raises(RuntimeError, match="can't be cast"):
        KERNELS["foreach_add__Scalar"](ints, 0.5)


def test_non_contiguous_and_errors(device):
    base = randn((4, 6), torch.float32, device)
    xs = [base.t(), base[:, ::2], base[1]]  # a dense transpose, strided, contiguous
    ref = [to_ref(x).clone() for x in xs]
    KERNELS["foreach_mul__Scalar"](xs, 3.0)
    _close(xs, [r * 3.0 for r in ref])
    with pytest.raises(ValueError, match="one length"):
        KERNELS["foreach_add_List"](xs, xs[:2], 1.0)
    with pytest.raises(ValueError, match="0-dim"):
        KERNELS["foreach_mul_Tensor"](xs, torch.ones(2))


def test_broadcast_operands(device):
    # capturable optimisers divide by lists of 0-dim tensors; other shapes expand
    xs = [randn((3, 2), torch.float32, device), randn((4,), torch.float32, device)]
    ds = [randn((), torch.float32, device, low=1.0, high=2.0), randn((1,), torch.float32, device)]
    ref = torch._foreach_div(_ref(xs), _ref(ds))
    _close(KERNELS["foreach_div_List"](xs, ds), ref)
    rows = [randn((2,), torch.float32, device), randn((4,), torch.float32, device)]
    _close(KERNELS["foreach_add_List"](xs, rows, 1.0), torch._foreach_add(_ref(xs), _ref(rows)))
    KERNELS["foreach_div__List"](xs, ds)
    _close(xs, ref)
    with pytest.raises(RuntimeError, match="shape"):
        KERNELS["foreach_add__List"](ds, xs, 1.0)


def test_small_lists_take_kernels_of_fewer_slots(device, monkeypatch):
    """A launch over fewer tensors than the cap takes a kernel of the next power of two
    of slots (its arguments are what a replay fills per call), with the same results."""
    assert _multi_tensor.slots_for(1, 1) == 1
    assert _multi_tensor.slots_for(1, 3) == 4
    assert _multi_tensor.slots_for(1, 10**6) == _multi_tensor.slot_cap(1)
    assert _multi_tensor.slots_for(5, 10**6) == _multi_tensor.slot_cap(5)
    arguments = []
    real = _multi_tensor.launch
    monkeypatch.setattr(
        _multi_tensor,
        "launch",
        lambda k, grid, *a, **kw: (arguments.append(len(a)), real(k, grid, *a, **kw)),
    )
    for n in (1, 3):
        xs = [randn((5 + i,), torch.float32, device) for i in range(n)]
        ref = [x.cpu() * 2.5 for x in xs]
        KERNELS["foreach_mul__Scalar"](xs, 2.5)
        _close(xs, ref)
    # one launch each; per slot a pointer, a size and a start: 1 slot, then 4
    assert len(arguments) == 2 and arguments[1] - arguments[0] == 3 * 3


def test_launches_scale_with_chunks(device):
    slots = _multi_tensor.slot_cap(1)  # one list: self, in place
    xs = [randn((3,), torch.float32, device) for _ in range(slots * 2 + 1)]
    before = _launch.launches()
    KERNELS["foreach_add__Scalar"](xs, 1.0)
    assert _launch.launches() - before == 3  # 3 chunks, not 2 * slots + 1 launches
    before = _launch.launches()
    KERNELS["foreach_add_List"](xs, xs, 1.0)  # self, other, out: fewer slots
    assert _launch.launches() - before == -(-len(xs) // _multi_tensor.slot_cap(3))


# ---- fused optimisers and AMP ------------------------------------------------


def _adam_state(device, amsgrad):
    (ps, gs, ms, vs, mx) = _lists(5, device, positive=True)
    return [ps, gs, ms, vs, mx if amsgrad else []]


@pytest.mark.parametrize(
    "adamw,amsgrad,maximize,tensor_lr,scale",
    [
        (True, False, False, False, False),
        (False, True, True, True, True),
        (True, True, False, False, True),
    ],
)
def test_fused_adam(adamw, amsgrad, maximize, tensor_lr, scale, device):
    state = _adam_state(device, amsgrad)
    ref = [_ref(lst) for lst in state]
    steps = [torch.full((), 3.0, device=device) for _ in state[0]]
    lr = torch.tensor(0.01, device=device) if tensor_lr else 0.01
    gsc = torch.tensor(4.0, device=device) if scale else None
    found = torch.zeros((), device=device) if scale else None
    kern = optim.fused_adamw_ if adamw else optim.fused_adam_
    kern(*state, steps, lr, 0.9, 0.99, 0.1, 1e-8, amsgrad, maximize, gsc, found)
    fn = torch._fused_adamw_ if adamw else torch._fused_adam_
    fn(
        *ref,
        [to_ref(s) for s in steps],
        lr=to_ref(lr) if tensor_lr else lr,
        beta1=0.9,
        beta2=0.99,
        weight_decay=0.1,
        eps=1e-8,
        amsgrad=amsgrad,
        maximize=maximize,
        grad_scale=gsc.cpu() if scale else None,
        found_inf=found.cpu() if scale else None,
    )
    for a, b in zip(state, ref):
        _close(a, b, atol=1e-6, rtol=1e-5)


def test_fused_adam_skips_on_found_inf(device):
    state = _adam_state(device, False)
    before = [_ref(lst) for lst in state]
    steps = [torch.full((), 1.0, device=device) for _ in state[0]]
    found = torch.ones((), device=device)
    optim.fused_adamw_(
        *state,
        steps,
        0.1,
        0.9,
        0.99,
        0.1,
        1e-8,
        False,
        False,
        torch.tensor(2.0, device=device),
        found,
    )
    for a, b in zip(state, before):
        _close(a, b)


SGD_CASES = [
    c for c in itertools.product([0.0, 0.9], [False, True], [False, True]) if c[0] or not c[1]
]


@pytest.mark.parametrize("momentum,nesterov,first", SGD_CASES)
def test_fused_sgd(momentum, nesterov, first, device):
    maximize = not first
    ps, gs, bufs = _lists(3, device)
    bufs = bufs if momentum else []
    ref = [_ref(ps), _ref(gs), _ref(bufs)]
    damp = 0.0 if nesterov else 0.1
    optim.fused_sgd_(ps, gs, bufs, 0.1, momentum, 0.05, damp, nesterov, maximize, first, None, None)
    torch._fused_sgd_(
        *ref,
        weight_decay=0.1,
        momentum=momentum,
        lr=0.05,
        dampening=damp,
        nesterov=nesterov,
        maximize=maximize,
        is_first_step=first,
    )
    for a, b in zip((ps, gs, bufs), ref):
        _close(a, b, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("bad", [False, True])
def test_amp_unscale(bad, device):
    gs = [randn((5,), torch.float32, device), randn((3, 2), torch.float16, device)]
    if bad:
        gs[1][1, 0] = float("nan")
    ref = _ref(gs)
    found = torch.zeros(1, device=device)
    optim.amp_foreach_non_finite_check_and_unscale_(gs, found, torch.full((1,), 0.5, device=device))
    rfound = torch.zeros(1)
    torch._amp_foreach_non_finite_check_and_unscale_(ref, rfound, torch.full((1,), 0.5))
    assert float(to_ref(found)) == float(rfound) == float(bad)
    _close(gs, ref)


@pytest.mark.parametrize("inf,tracker", [(0.0, 0), (0.0, 1), (1.0, 1)])
def test_amp_update_scale(inf, tracker, device):
    scale = torch.full((1,), 4.0, device=device)
    tr = torch.full((1,), tracker, dtype=torch.int32, device=device)
    optim.amp_update_scale_(scale, tr, torch.full((1,), inf, device=device), 2.0, 0.5, 2)
    rs, rt = torch.full((1,), 4.0), torch.full((1,), tracker, dtype=torch.int32)
    torch._amp_update_scale_(rs, rt, torch.full((1,), inf), 2.0, 0.5, 2)
    assert float(to_ref(scale)) == float(rs) and int(to_ref(tr)) == int(rt)


@pytest.fixture
def small_chunks(monkeypatch):
    """Blocks of 16 elements, 4 per chunk (the GPU's loop of blocks per program, at a
    size the interpreter runs quickly): tensors of 1 to 13 blocks, partial chunks."""
    monkeypatch.setattr(_multi_tensor, "block_for", lambda n: 16)
    force_spec(monkeypatch, _multi_tensor, multi_tensor_iters=4)


CHUNKED = [(1,), (16,), (17,), (63,), (64,), (65,), (13, 16), (3, 67)]


def test_chunks_of_several_blocks(small_chunks, device):
    torch.manual_seed(7)
    xs, ys, zs = ([randn(s, torch.float32, device) for s in CHUNKED] for _ in range(3))
    ref = [_ref(t) for t in (xs, ys, zs)]
    KERNELS["foreach_addcmul__Scalar"](xs, ys, zs, 0.5)
    torch._foreach_addcmul_(*ref, 0.5)
    _close(xs, ref[0])
    for ord in (2, 1, float("inf")):
        _close(KERNELS["foreach_norm"](xs, ord, None), torch._foreach_norm(ref[0], ord))
    _close(KERNELS["foreach_max"](ys), torch._foreach_max(ref[1]))
    found = torch.zeros(1, device=device)
    optim.amp_foreach_non_finite_check_and_unscale_(zs, found, torch.full((1,), 0.5, device=device))
    rfound = torch.zeros(1)
    torch._amp_foreach_non_finite_check_and_unscale_(ref[2], rfound, torch.full((1,), 0.5))
    _close(zs, ref[2])
    assert float(to_ref(found)) == 0.0
    zs[-1][2, 66] = float("inf")  # the last element of the last chunk
    optim.amp_foreach_non_finite_check_and_unscale_(zs, found, torch.full((1,), 1.0, device=device))
    assert float(to_ref(found)) == 1.0


def test_fused_adamw_in_chunks(small_chunks, device):
    torch.manual_seed(8)
    state = [
        [randn(s, torch.float32, device, low=0.5, high=2.0) for s in CHUNKED] for _ in range(4)
    ]
    ref = [_ref(lst) for lst in state]
    steps = [torch.full((), 2.0, device=device) for _ in CHUNKED]
    optim.fused_adamw_(*state, [], steps, 0.01, 0.9, 0.99, 0.1, 1e-8, False, False, None, None)
    torch._fused_adamw_(
        *ref, [], [torch.full((), 2.0) for _ in CHUNKED], lr=0.01, beta1=0.9, beta2=0.99,
        weight_decay=0.1, eps=1e-8, amsgrad=False, maximize=False,
    )  # fmt: skip
    for a, b in zip(state, ref):
        _close(a, b, atol=1e-6, rtol=1e-5)
