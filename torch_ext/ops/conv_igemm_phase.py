"""The adjoint gather of a strided convolution by phases (the input gradient of a plain
convolution, the forward of a transposed one), for dilation 1.

conv_igemm.py's gather gives each result pixel o every kernel tap k and keeps those
where (o + padding - k) divides by the stride: at stride 2 a 3x3 kernel's taps are valid
for 2.25 of 9 on average, so three quarters of the products multiply zeros, and each
row divides by the stride at every step. Here the result pixels are grouped by their
residue r = o mod stride (per dim): pixel o = r + stride * q receives exactly the taps
k = k0 + stride * j, k0 = (r + padding) mod stride, from the source pixel
i = q + (r + padding - k0) / stride - j. A program owns one residue class's rows, so the
taps it runs and the offsets of their source pixels are the same for all its rows: no
zero products, no division in the loop. Rows are (image, q) over ceil(size / stride) per
dim, those past the image masked.
"""

import triton
import triton.language as tl

from ._common import split3, tl_float_acc
from ._launch import cdiv, launch, next_pow2


@triton.jit
def _phase_kernel(
    x, wt, b, y, N, G, CR, CO, I0, I1, I2, O0, O1, O2, Q0, Q1, Q2, K0, K1, K2,
    s0, s1, s2, p0, p1, p2, TILES,
    HAS_BIAS: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
    ACC: tl.constexpr, IDX64: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
    BK: tl.constexpr,
):  # fmt: skip
    cls = tl.program_id(0) // TILES  # the residue class (r0, r1, r2)
    tile = tl.program_id(0) % TILES
    grp = tl.program_id(2)
    r0, r1, r2 = split3(cls, s1, s2)
    # this class's taps, k = k0 + s * j for j < nk per dim, and its source offsets
    k00 = (r0 + p0) % s0
    k01 = (r1 + p1) % s1
    k02 = (r2 + p2) % s2
    nk0 = tl.maximum(tl.cdiv(K0 - k00, s0), 0)
    nk1 = tl.maximum(tl.cdiv(K1 - k01, s1), 0)
    nk2 = tl.maximum(tl.cdiv(K2 - k02, s2), 0)
    base0 = (r0 + p0 - k00) // s0
    base1 = (r1 + p1 - k01) // s1
    base2 = (r2 + p2 - k02) // s2
    if IDX64:
        rm = tile.to(tl.int64) * BM + tl.arange(0, BM)
    else:
        rm = tile * BM + tl.arange(0, BM)
    QP = Q0 * Q1 * Q2
    n = rm // QP
    q0, q1, q2 = split3(rm % QP, Q1, Q2)
    o0 = r0 + s0 * q0
    o1 = r1 + s1 * q1
    o2 = r2 + s2 * q2
    m_ok = (n < N) & (o0 < O0) & (o1 < O1) & (o2 < O2)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    n_ok = rn < CO
    XC = G * CR  # channels of x, of which this group reads CR from grp * CR
    x_grp = x + grp * CR
    w_grp = wt + grp * CR * CO + rn[None, :]
    img = n * I0
    blocks = tl.cdiv(CR, BK)
    acc = tl.zeros((BM, BN), ACC)
    for kk in range(0, nk0 * nk1 * nk2 * blocks):
        tap = kk // blocks
        c = (kk - tap * blocks) * BK + tl.arange(0, BK)
        j0, j1, j2 = split3(tap, nk1, nk2)
        kpos = ((k00 + s0 * j0) * K1 + k01 + s1 * j1) * K2 + k02 + s2 * j2
        i0 = q0 + (base0 - j0)
        i1 = q1 + (base1 - j1)
        i2 = q2 + (base2 - j2)
        ok = m_ok & (i0 >= 0) & (i0 < I0) & (i1 >= 0) & (i1 < I1) & (i2 >= 0) & (i2 < I2)
        pix = ((img + i0) * I1 + i1) * I2 + i2
        c_ok = c < CR
        at = tl.load(x_grp + pix[:, None] * XC + c[None, :], mask=ok[:, None] & c_ok[None, :],
                     other=0)  # fmt: skip
        bt = tl.load(w_grp + (kpos * XC + c[:, None]) * CO, mask=c_ok[:, None] & n_ok[None, :],
                     other=0)  # fmt: skip
        if UPCAST:
            at = at.to(tl.float32)
            bt = bt.to(tl.float32)
        acc += tl.dot(at, bt, input_precision=PRECISION, out_dtype=ACC)
    if HAS_BIAS:
        acc += tl.load(b + grp * CO + rn, mask=n_ok, other=0).to(ACC)[None, :]
    v = acc
    if y.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    m = ((n * O0 + o0) * O1 + o1) * O2 + o2
    out = y + m[:, None] * (G * CO) + grp * CO + rn[None, :]
    tl.store(out, v.to(y.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def phase_fits(stride, dilation):
    """Whether the strided adjoint gather runs by phases: a stride > 1, dilation 1."""
    return any(s > 1 for s in stride) and all(d == 1 for d in dilation)


def phase_scatter(xi, wt, bias, y_inner, k, o, grid, s, p, groups, cfg, upcast, precision,
                  idx64):  # fmt: skip
    """y_inner (N, *o, groups * CO) from xi (N, *grid, groups * CR) channels-inner and
    wt (KP, groups, CR, CO); k, o, grid, s, p padded to 3 dims (conv_igemm._igemm)."""
    N = xi.shape[0]
    _, _, cr, co = wt.shape
    bm, bn, bk, warps, stages = cfg
    bk = min(bk, max(16, next_pow2(cr)))  # channels per step
    q = [cdiv(o[d], s[d]) for d in range(3)]
    tiles = cdiv(N * q[0] * q[1] * q[2], bm)
    launch(
        _phase_kernel, (s[0] * s[1] * s[2] * tiles, cdiv(co, bn), groups),
        xi, wt, bias if bias is not None else y_inner, y_inner,
        N, groups, cr, co, *grid, *o, *q, *k, *s, *p, tiles,
        HAS_BIAS=bias is not None, UPCAST=upcast, PRECISION=precision,
        ACC=tl_float_acc(xi.dtype), IDX64=idx64,
        BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages,
    )  # fmt: skip
