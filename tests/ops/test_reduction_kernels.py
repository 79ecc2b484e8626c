"""Reductions against PyTorch (float64 reference, atol scaled by reduced size)."""

import math

import pytest
import torch
import triton.language as tl

from torch_ext.ops import reduction as R
from torch_ext.ops import reduction_arg as A
from torch_ext.ops import scan, statistics

from helpers import FLOAT_DTYPES, force_spec, randn, spy_launches, to_ref
from helpers import assert_kernel_close as assert_close

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DIMS = [None, [1], [0], [2], [0, 2], [-1, -2]]


def _out(x, dims, keepdim, dtype):
    d = R.normalize_dims(dims, x.dim())
    shape = (
        [1 if i in d else s for i, s in enumerate(x.shape)]
        if keepdim
        else [s for i, s in enumerate(x.shape) if i not in d]
    )
    return torch.empty(shape, dtype=dtype, device=x.device)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.float64])
@pytest.mark.parametrize("dims", DIMS)
def test_sum_mean_amax_amin(dims, dtype, device):
    x = randn((5, 33, 7), dtype, device)
    xr = to_ref(x)
    rdims = list(range(3)) if dims is None else dims
    n = math.prod(x.shape[d] for d in rdims)
    for keepdim in (False, True):
        out = _out(x, dims, keepdim, dtype)
        R.sum_out(x, dims, keepdim, None, out)
        assert_close(out, xr.sum(rdims, keepdim=keepdim), dtype, reduce_dim=n)
        R.mean_out(x, dims, keepdim, None, out)
        assert_close(out, xr.mean(rdims, keepdim=keepdim), dtype)
        R.amax_out(x, dims or [], keepdim, out)
        assert_close(out, xr.amax(rdims, keepdim=keepdim), dtype)
        R.amin_out(x, dims or [], keepdim, out)
        assert_close(out, xr.amin(rdims, keepdim=keepdim), dtype)


def test_reduction_shapes(device):
    for shape, dims in [((0, 4), [0]), ((3, 0), [1]), ((), None), ((1,), [0]), ((4097,), [0])]:
        x = randn(shape, torch.float32, device)
        out = _out(x, dims, False, torch.float32)
        R.sum_out(x, dims, False, None, out)
        assert_close(out, to_ref(x).sum(dims or []), reduce_dim=max(x.numel(), 1))
        R.mean_out(x, dims, False, None, out)
        assert_close(out, to_ref(x).mean(dims or list(range(x.dim()))).float())
    x = randn((6, 40), torch.float32, device)[:, ::3]  # non-contiguous
    out = torch.empty(6, device=device)
    R.sum_out(x, [1], False, None, out)
    assert_close(out, to_ref(x).sum(1), reduce_dim=14)
    out = torch.empty(14, device=device)
    R.amax_out(x.t(), [1], False, out)
    assert_close(out, to_ref(x).t().amax(1))


def test_sum_dtypes(device):
    i = randn((7, 9), torch.int32, device)
    out = torch.empty(9, dtype=torch.int64, device=device)
    R.sum_out(i, [0], False, None, out)
    assert_close(out, i.cpu().sum(0))
    assert_close(R.sum_all(i), i.cpu().sum())
    h = randn((300,), torch.float16, device)
    out = torch.empty((), dtype=torch.float32, device=device)
    R.sum_out(h, None, False, torch.float32, out)
    assert_close(out, to_ref(h).sum(), torch.float32, reduce_dim=300)
    b = randn((10, 3), torch.bool, device)
    out = torch.empty(3, dtype=torch.int64, device=device)
    R.sum_out(b, [0], False, None, out)
    assert_close(out, b.cpu().sum(0))


def test_prod(device):
    x = randn((4, 6), torch.float32, device, 0.5, 1.5)
    out = torch.empty(4, device=device)
    R.prod_out(x, 1, False, None, out)
    assert_close(out, to_ref(x).prod(1), torch.float32)
    i = randn((3, 5), torch.int64, device, -3, 4)
    assert_close(R.prod_all(i), i.cpu().prod())


def test_max_min_arg(device):
    x = randn((5, 17, 4), torch.float32, "cpu")
    x[1, 3, 2] = math.nan
    x = x.to(device)
    for dim in (0, 1, 2):
        shape = [s for d, s in enumerate(x.shape) if d != dim]
        v = torch.empty(shape, device=device)
        i = torch.empty(shape, dtype=torch.int64, device=device)
        A.max_dim_out(x, dim, False, v, i)
        ref = torch.max(x.cpu(), dim)
        assert_close(v, ref.values)
        assert_close(i, ref.indices)
        A.min_dim_out(x, dim, False, v, i)
        ref = torch.min(x.cpu(), dim)
        assert_close(v, ref.values)
        assert_close(i, ref.indices)
    xi = randn((6, 9), torch.int64, device, -3, 3)  # many ties: first index wins
    out = torch.empty(6, dtype=torch.int64, device=device)
    A.argmax_out(xi, 1, False, out)
    assert_close(out, xi.cpu().argmax(1))
    A.argmin_out(xi, 1, False, out)
    assert_close(out, xi.cpu().argmin(1))
    out = torch.empty((), dtype=torch.int64, device=device)
    A.argmax_out(xi, None, False, out)
    assert_close(out, xi.cpu().argmax())
    assert_close(R.max_all(x), x.cpu().max())
    assert_close(R.min_all(xi), xi.cpu().min())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_var_std(dtype, device):
    x = randn((6, 50, 3), dtype, device) + 3
    xr = to_ref(x)
    for dims in (None, [1], [0, 2]):
        rd = dims or [0, 1, 2]
        for corr in (None, 0, 2):
            c = 1 if corr is None else corr
            assert_close(statistics.var_correction(x, dims, corr), xr.var(rd, correction=c), dtype)
            assert_close(
                statistics.std_correction(x, dims, corr, True),
                xr.std(rd, correction=c, keepdim=True),
                dtype,
            )
        v, m = statistics.var_mean_correction(x, dims, None)
        rv, rm = torch.var_mean(xr, rd)
        assert_close(v, rv, dtype)
        assert_close(m, rm, dtype)


def test_norm_logsumexp_all_any(device):
    x = randn((7, 30), torch.float32, device)
    xr = to_ref(x)
    for ord in (2, 1, 3, 0, math.inf, -math.inf):
        out = torch.empty(7, device=device)
        statistics.linalg_vector_norm_out(x, ord, [1], False, None, out)
        assert_close(out, torch.linalg.vector_norm(xr, ord, 1), torch.float32, reduce_dim=30)
    assert_close(statistics.logsumexp(x, [1]), torch.logsumexp(xr, 1), torch.float32)
    big = torch.full((3, 4), -math.inf)
    big[0, 0] = 1.0
    big = big.to(device)
    assert_close(statistics.logsumexp(big, [1]), torch.logsumexp(big.cpu(), 1))
    b = (x.cpu() > 0.5).to(device)
    out = torch.empty(30, dtype=torch.bool, device=device)
    R.any_out(b, [0], False, out)
    assert_close(out, b.cpu().any(0))
    R.all_out(b, 0, False, out)
    assert_close(out, b.cpu().all(0))
    out = torch.empty((), dtype=torch.bool, device=device)
    R.all_all_out((x.cpu() != 100).to(device), out)
    assert bool(out.cpu())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_cumsum(dtype, device):
    x = randn((5, 300, 3), dtype, device, -5, 5)
    for dim in (0, 1, 2):
        out = torch.empty(
            x.shape, dtype=torch.int64 if not dtype.is_floating_point else dtype, device=device
        )
        scan.cumsum_out(x, dim, None, out)
        ref = to_ref(x).cumsum(dim)
        assert_close(
            out,
            ref if not dtype.is_floating_point else ref.to(dtype),
            dtype if dtype.is_floating_point else None,
            reduce_dim=x.shape[dim],
        )
    out = torch.empty(6, 5, device=device).t()
    xs = randn((5, 6), torch.float32, device)
    scan.cumsum_out(xs, 1, None, out)
    assert_close(out, to_ref(xs).cumsum(1), reduce_dim=6)


@pytest.mark.parametrize("splits", [3, 7])
def test_split_reductions(splits, device, monkeypatch):
    # The two-pass path for few outputs and long reductions (forced here).
    monkeypatch.setattr(R, "_splits", lambda O, Rn, B=1: splits if Rn > 10 else 1)
    x = randn((3, 1000), torch.float32, device)
    xr = to_ref(x)
    out = torch.empty(3, device=device)
    R.sum_out(x, [1], False, None, out)
    assert_close(out, xr.sum(1), reduce_dim=1000)
    R.mean_out(x, [1], False, None, out)
    assert_close(out, xr.mean(1))
    R.amax_out(x, [1], False, out)
    assert_close(out, xr.amax(1))
    assert_close(statistics.var_correction(x, [1], None), xr.var(1), torch.float32)
    assert_close(statistics.std_correction(x, [1], 0), xr.std(1, correction=0), torch.float32)
    assert_close(statistics.logsumexp(x, [1]), torch.logsumexp(xr, 1), torch.float32)
    statistics.linalg_vector_norm_out(x, 2, [1], False, None, out)
    assert_close(out, torch.linalg.vector_norm(xr, 2, 1), torch.float32, reduce_dim=1000)
    b = torch.empty(3, dtype=torch.bool, device=device)
    R.any_out(x, [1], False, b)
    assert_close(b, xr.any(1))
    R.all_out((x.cpu() > -10).to(device), 1, False, b)
    assert_close(b, (xr > -10).all(1))
    i = randn((2, 500), torch.int64, device, -1, 3)
    o = torch.empty(2, dtype=torch.int64, device=device)
    R.prod_out((i.cpu() != 0).long().to(device), 1, False, None, o)
    assert_close(o, (i.cpu() != 0).long().prod(1))


def test_cumprod_and_empty_max(device):
    x = randn((4, 50, 3), torch.float32, device, 0.8, 1.2)
    for dim in (0, 1, 2):
        out = torch.empty_like(x)
        scan.cumprod_out(x, dim, None, out)
        assert_close(out, to_ref(x).cumprod(dim), torch.float32, reduce_dim=x.shape[dim])
    with pytest.raises(RuntimeError):
        R.max_all(torch.empty(0, device=device))


@pytest.mark.parametrize("p", [-1.0, -2.0, 0.5, 3.0])
def test_vector_norm_with_zero_entries(p, device):
    # |0|**p is inf for p < 0, so a row with a zero has norm 0 (normalize then
    # divides by eps); for p > 0 the zero adds nothing.
    xc = torch.randn(3, 7)
    xc[1, 2] = 0.0
    out = torch.empty(3, device=device)
    statistics.linalg_vector_norm_out(xc.to(device), p, [1], False, None, out)
    ref = torch.linalg.vector_norm(xc.double(), p, 1)
    if p < 0:
        assert out.cpu()[1].item() == 0.0
    assert_close(out, ref.float(), reduce_dim=7)


def _nan_variants(ints):
    """(dtype, nan_combine): both ways of letting NaN win for floats (the cuda driver's
    NaN-propagating combine, or tl.max/min and a NaN flag); integers have no NaN."""
    floats = [pytest.param(dt, nc, id=f"{dt}-{'nan_combine' if nc else 'two_reductions'}")
              for dt in FLOAT_DTYPES for nc in (False, True)]  # fmt: skip
    return floats + [pytest.param(dt, False, id=str(dt)) for dt in ints]


@pytest.mark.parametrize("dtype,nan_combine", _nan_variants([torch.int64]))
@pytest.mark.parametrize("shape,dim", [((6, 64), 1), ((6, 65), 1), ((6, 200), 1), ((5, 70, 3), 1)])
def test_arg_reductions_one_tile_and_looped(shape, dim, dtype, nan_combine, device, monkeypatch):
    """argmax/argmin and max/min(dim) in one read: rows up to a small forced cap in one
    tile, longer ones over tiles of 64 merged into a running (value, index) pair; a tile's
    extreme by the NaN-propagating combine the cuda driver uses or by tl.max/min and a NaN
    flag, then its first index. NaN wins (the first NaN), equal values keep the first
    index, within a tile and across tiles."""
    from torch_ext.ops import _common, _rows

    force_spec(monkeypatch, A, reduction_nan_combine=nan_combine)
    force_spec(monkeypatch, _rows, row_tile_cap=64)
    force_spec(monkeypatch, _common, reduction_block=64)
    n = shape[dim]
    if dtype.is_floating_point:
        x = torch.randint(-4, 4, shape).to(dtype)  # many ties
        x.select(dim, n - 1).fill_(10)  # a later tile's winner...
        x.select(dim, 3).fill_(10)  # ...that an earlier equal value keeps
        x[1] = -float("inf")
        x[2, 40] = float("nan")
        x[3, n // 2 :] = float("nan")  # NaNs past the first keep its index
        x[4, 0] = float("nan")
    else:
        x = torch.randint(-3, 3, shape, dtype=dtype)
    x = x.to(device)
    out_shape = [s for d, s in enumerate(shape) if d != dim]
    idx = torch.empty(out_shape, dtype=torch.int64, device=device)
    vals = torch.empty(out_shape, dtype=dtype, device=device)
    for is_max in (True, False):
        (A.argmax_out if is_max else A.argmin_out)(x, dim, False, idx)
        assert_close(idx, (x.cpu().argmax if is_max else x.cpu().argmin)(dim))
        (A.max_dim_out if is_max else A.min_dim_out)(x, dim, False, vals, idx)
        ref = (torch.max if is_max else torch.min)(x.cpu(), dim)
        assert_close(idx, ref.indices)
        assert_close(vals, ref.values, dtype)


def _check_rows_against_cpu(x):
    """argmax/argmin and max/min(dim) over the rows of float32 x (on the device), each
    against the CPU's."""
    idx = torch.empty(x.shape[0], dtype=torch.int64, device=x.device)
    vals = torch.empty(x.shape[0], device=x.device)
    for is_max in (True, False):
        (A.argmax_out if is_max else A.argmin_out)(x, 1, False, idx)
        assert_close(idx, (x.cpu().argmax if is_max else x.cpu().argmin)(1))
        (A.max_dim_out if is_max else A.min_dim_out)(x, 1, False, vals, idx)
        ref = (torch.max if is_max else torch.min)(x.cpu(), 1)
        assert_close(idx, ref.indices)
        assert_close(vals, ref.values)


@pytest.mark.parametrize("lanes", [None, (16, 1), (32, 2)], ids=["looped", "step16", "step32"])
def test_arg_reductions_lanes_kernel(lanes, device, monkeypatch):
    """Rows past the one-tile cap, and rows the driver sends there (`arg_lanes_tile`:
    step, warps), take the kernel that keeps a running winner per lane
    and reduces once at the end: the first NaN, then the first of equal extremes across
    steps and lanes, an all -inf row's index 0, a winner in a short last step."""
    from torch_ext.ops import _common, _rows

    force_spec(monkeypatch, _rows, row_tile_cap=64)
    force_spec(monkeypatch, _common, reduction_block=64)
    force_spec(monkeypatch, A, arg_lanes_tile=lanes)
    calls = spy_launches(monkeypatch, A)
    n = 200 if lanes is None else 30  # looped: past the cap (32: two arrays); lanes: within it
    x = torch.randint(-4, 4, (7, n)).float()
    x[0, 17], x[0, 26] = 9, 9  # equal winners in different lanes and steps: 17
    x[1] = -float("inf")
    x[2, n - 1] = 9  # in the short last step
    x[3, 25], x[3, 5] = float("nan"), float("nan")  # the first NaN: 5
    x[4, 20] = 9
    x[4, 4] = 9  # an earlier step's equal value in another lane: 4
    _check_rows_against_cpu(x.to(device))
    assert calls and all(k is A._arg_lanes_kernel for k, _ in calls)
    if lanes is not None:
        assert all((kw["BLOCK_R"], kw["num_warps"]) == lanes for _, kw in calls), calls


@pytest.mark.parametrize("step", [16, 32], ids=["step16", "step32"])
def test_arg_reductions_rescan_kernel(step, device, monkeypatch):
    """Few contiguous rows that the driver sends to wide steps (`arg_rescan_tile`: step,
    warps) take the kernel that keeps each lane's extreme only, then reads again the
    lanes that hold the row's: one lane element by element (a winner in the short last
    step, equal winners in one lane), several lanes by a masked walk (equal winners in
    different lanes and steps, NaNs in two lanes, an all -inf row: index 0)."""
    from torch_ext.ops import _rows

    force_spec(monkeypatch, _rows, row_tile_cap=64)
    force_spec(monkeypatch, A, arg_rescan_tile=(step, 1))
    calls = spy_launches(monkeypatch, A)
    for n in (50, 200):  # within one tile; past the cap (the per-lane kernel's rows)
        x = torch.randint(-4, 4, (7, n)).float()
        x[0, 17], x[0, 26] = 9, 9  # different lanes (16 and 32 wide): 17
        x[1] = -float("inf")
        x[2, n - 1] = 9  # in the short last step
        x[3, 25], x[3, 5] = float("nan"), float("nan")  # the first NaN: 5
        x[4, 4 + step], x[4, 4] = 9, 9  # one lane, two steps: 4
        x[5, 0] = float("nan")
        _check_rows_against_cpu(x.to(device))
    assert calls and all(k is A._arg_rescan_kernel for k, _ in calls)
    assert all((kw["BLOCK_R"], kw["num_warps"]) == (step, 1) for _, kw in calls), calls


def test_arg_rescan_tile_cuda_rule(monkeypatch):
    """The cuda driver's rule: fewer rows than multiprocessors, each of 4Ki or more: steps
    of up to 8Ki, 16 values a thread; many rows or short ones keep the other kernels."""
    from torch_ext.backends.cuda import spec as cuda_spec

    sms = 132  # an H100/H200
    monkeypatch.setattr(cuda_spec, "_sm_count", lambda: sms)
    assert cuda_spec.arg_rescan_tile(64, 50257, 2) == (8192, 16)
    assert cuda_spec.arg_rescan_tile(1, 4096, 4) == (4096, 8)
    assert cuda_spec.arg_rescan_tile(1, 5000, 2) == (8192, 16)
    assert cuda_spec.arg_rescan_tile(1, 4095, 2) is None
    assert cuda_spec.arg_rescan_tile(sms, 8192, 2) is None


@pytest.mark.parametrize(
    "dtype",
    [torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.uint8, torch.int16,
     torch.int32, torch.bool],
    ids=str,
)  # fmt: skip
@pytest.mark.parametrize("shape,dim", [((6, 64), 1), ((6, 200), 1), ((5, 70, 3), 1)])
@pytest.mark.parametrize("nan_combine", [False, True], ids=["flag", "nan_combine"])
@pytest.mark.parametrize("rescan", [None, (32, 1)], ids=["tile", "rescan"])
def test_arg_reductions_dtypes(shape, dim, dtype, nan_combine, rescan, device, monkeypatch):
    """argmax/argmin and max/min(dim) over 16/32-bit and small integer dtypes (fp16 in
    its own dtype where the NaN-propagating combine runs, as on the GPU): -0 ties +0 (the
    first index wins), every NaN beats +inf for argmax and -inf for argmin, negative
    values order by magnitude, in one tile and across tiles of 64; values bit-exact."""
    from torch_ext.ops import _common, _rows

    force_spec(monkeypatch, _rows, row_tile_cap=64)
    force_spec(monkeypatch, _common, reduction_block=64)
    # rescan: contiguous rows that the driver sends to steps of 32
    force_spec(monkeypatch, A, reduction_nan_combine=nan_combine, arg_rescan_tile=rescan)
    calls = spy_launches(monkeypatch, A)
    n = shape[dim]
    g = torch.Generator().manual_seed(1)
    if dtype == torch.bool:
        x = torch.rand(shape, generator=g) > 0.7
    elif dtype.is_floating_point:
        x = (torch.randn(shape, generator=g) * 100).to(dtype)
        x[0] = -0.0
        x[0, n // 2 :] = 0.0  # +0 after -0: ties
        x[1] = -x[1].abs() - 1  # all negative: largest = smallest magnitude
        x[2, 5] = float("inf")
        x[2, n - 1] = float("nan")  # NaN after +inf wins argmax and argmin
        x[3] = float("-inf")
        x[3, n - 2] = -float("nan")  # a negative NaN still wins
        x[4, 0] = float("nan")
    else:
        lo = 0 if dtype == torch.uint8 else torch.iinfo(dtype).min
        hi = torch.iinfo(dtype).max
        x = torch.randint(-50 if lo else 0, 50, shape, generator=g).to(dtype)
        x[0, n - 1], x[1, 3], x[1, n - 1] = hi, lo, lo  # the extremes; ties keep the first
    x = x.to(device)
    out_shape = [s for d, s in enumerate(shape) if d != dim]
    idx = torch.empty(out_shape, dtype=torch.int64, device=device)
    vals = torch.empty(out_shape, dtype=dtype, device=device)
    for is_max in (True, False):
        if dtype != torch.bool:  # torch's argmax/argmin take no bool
            (A.argmax_out if is_max else A.argmin_out)(x, dim, False, idx)
            assert_close(idx, (x.cpu().argmax if is_max else x.cpu().argmin)(dim))
        (A.max_dim_out if is_max else A.min_dim_out)(x, dim, False, vals, idx)
        ref = (torch.max if is_max else torch.min)(x.cpu(), dim)
        assert_close(idx, ref.indices)
        assert torch.equal(vals.cpu().view(torch.uint8), ref.values.view(torch.uint8))
    native = nan_combine and dtype == torch.float16
    accs = [kw["ACC"] for _, kw in calls]
    assert accs and all((a == tl.float16) == native for a in accs), accs
    rows = rescan is not None and len(shape) == 2  # contiguous rows (B == 1)
    assert all((k is A._arg_rescan_kernel) == rows for k, _ in calls), calls


def _launches(monkeypatch):
    """The (ONE_TILE, BLOCK_O, BLOCK_R) of each _reduce_kernel launch from now on."""
    seen = []
    launch = R.launch

    def recording(kernel, grid, *args, **kwargs):
        if kernel is R._reduce_kernel:
            seen.append((kwargs["ONE_TILE"], kwargs["BLOCK_O"], kwargs["BLOCK_R"]))
        return launch(kernel, grid, *args, **kwargs)

    monkeypatch.setattr(R, "launch", recording)
    return seen


def _special_rows(x):
    """Rows 1-5 of a float (rows, width) tensor: all -inf, a NaN inside, a NaN last, +inf
    with -inf, a NaN first among infinities."""
    w = x.shape[1]
    x[1] = -math.inf
    x[2, w // 2] = math.nan
    x[3, w - 1] = math.nan
    x[4, 0], x[4, w - 1] = math.inf, -math.inf
    x[5] = math.inf
    x[5, 0] = math.nan
    return x


@pytest.mark.parametrize("dtype,nan_combine", _nan_variants([torch.int32, torch.int64]))
@pytest.mark.parametrize("width", [1, 5, 32, 33, 63, 64, 65, 200])
def test_reductions_one_tile_and_looped(width, dtype, nan_combine, device, monkeypatch):
    """sum/mean/prod/amax/amin (and var, logsumexp, the inf norms: the same kernel) over
    the last dim under a forced cap of 64: rows up to it in one tile (short rows several a
    program, the last program partial; 32 for the int64 accumulator of integers: two
    arrays), longer ones looped over tiles of 16. NaN wins in
    amax/amin (by the NaN-propagating combine the cuda driver uses, or tl.max/min and a
    NaN flag), -inf/+inf rows, float32 accumulation of halves, integers exactly."""
    from torch_ext.ops import _common, _rows

    force_spec(monkeypatch, _rows, row_tile_cap=64, reduction_block=16, reduction_tile_bytes=64)
    force_spec(monkeypatch, _common, reduction_block=16)
    force_spec(monkeypatch, R, reduction_nan_combine=nan_combine)
    seen = _launches(monkeypatch)
    rows = 7
    if dtype.is_floating_point:
        x = torch.randn(rows, width, dtype=torch.float64).to(dtype)
        if width > 1:
            x = _special_rows(x)
    else:
        x = torch.randint(-50, 50, (rows, width), dtype=dtype)
    xd = x.to(device)
    xr = x.double() if dtype.is_floating_point else x
    out = torch.empty(rows, dtype=dtype, device=device)
    for op, ref in ((R.amax_out, xr.amax(1)), (R.amin_out, xr.amin(1))):
        op(xd, [1], False, out)
        assert_close(out, ref.to(dtype))
    if not dtype.is_floating_point:
        out = torch.empty(rows, dtype=torch.int64, device=device)
        R.sum_out(xd, [1], False, None, out)
        assert_close(out, x.sum(1))
        small = (x % 3 - 1).to(device)  # -1, 0, 1: products stay small
        R.prod_out(small, 1, False, None, out)
        assert_close(out, (x % 3 - 1).prod(1))
    else:
        R.sum_out(xd, [1], False, None, out)
        assert_close(out, xr.sum(1), dtype, reduce_dim=width)
        R.mean_out(xd, [1], False, None, out)
        assert_close(out, xr.mean(1), dtype)
        R.prod_out((xd * 0.1 + 1), 1, False, None, out)  # a mean-1 product of finite rows
        assert_close(out, (x.double() * 0.1 + 1).prod(1), dtype, reduce_dim=width)
        if width > 1:
            assert_close(statistics.var_correction(xd, [1], None), xr.var(1), dtype)
        assert_close(statistics.logsumexp(xd, [1]), torch.logsumexp(xr, 1), dtype)
        for ord in (math.inf, -math.inf):
            statistics.linalg_vector_norm_out(xd, ord, [1], False, None, out)
            assert_close(out, torch.linalg.vector_norm(xr, ord, 1), dtype)
    kinds = {one for one, _, _ in seen}
    assert kinds == ({True} if width <= (64 if dtype.is_floating_point else 32) else {False}), seen
    if width == 5:
        # 8 lanes a row, 64 bytes a program (at least the 16-element reduction tile): 4
        # rows of 2-byte elements, 2 of 4- or 8-byte ones.
        assert {bo for _, bo, _ in seen} == {max(64 // x.element_size(), 16) // 8}, seen


def test_reduction_paths_kept(device, monkeypatch):
    """A non-innermost dim keeps its looped tiles; a split reduction (few outputs, long
    rows) keeps its two launches; empty rows give the identity (sum) or NaN (mean); an
    empty amax raises as before."""
    from torch_ext.ops import _common, _rows

    force_spec(monkeypatch, _rows, row_tile_cap=64)
    force_spec(monkeypatch, _common, reduction_block=16)
    seen = _launches(monkeypatch)
    x = randn((5, 40, 3), torch.float32, device)
    out = torch.empty(5, 3, device=device)
    R.amax_out(x, [1], False, out)
    assert_close(out, to_ref(x).amax(1))
    assert seen == [(False, *_common.reduce_blocks(15, 40, 3))]  # the generic tiles
    seen.clear()
    monkeypatch.setattr(R, "_splits", lambda O, Rn, B=1: 3 if Rn > 10 else 1)
    y = randn((2, 50), torch.float16, device)
    out = torch.empty(2, dtype=torch.float16, device=device)
    R.sum_out(y, [1], False, None, out)
    assert_close(out, to_ref(y).sum(1), torch.float16, reduce_dim=50)
    assert [one for one, _, _ in seen] == [False, False]
    e = torch.empty(3, 0, device=device)
    out = torch.empty(3, device=device)
    R.sum_out(e, [1], False, None, out)
    assert_close(out, torch.zeros(3))
    R.mean_out(e, [1], False, None, out)
    assert out.isnan().all()
    with pytest.raises(RuntimeError):
        R.max_all(torch.empty(0, device=device))


def test_short_strided_reductions_take_wide_tiles(device):
    """A reduction over a short axis whose rows lie B apart (the float32 slices of a split
    weight gradient, (S, N) summed over S) takes tiles of the block budget over its rows; long
    axes keep 64; the sum stays the ordered one (equal to the CPU's float64 sum)."""
    from torch_ext.ops import _common

    bo, br = _common.reduce_blocks(589824, 3, 589824)
    assert br == 4 and bo >= 1024  # the driver's block budget (4Ki or more) over 4 rows
    assert _common.reduce_blocks(589824, 12, 589824) == (bo // 4, 16)
    assert _common.reduce_blocks(4096, 1000, 4096)[0] == 64
    from torch_ext.ops.reduction import sum_slices

    buf = torch.randn(3, 5000, dtype=torch.float64)
    got = sum_slices(buf.to(device), torch.float64).cpu()
    torch.testing.assert_close(got, buf[0] + buf[1] + buf[2], atol=1e-12, rtol=1e-12)
