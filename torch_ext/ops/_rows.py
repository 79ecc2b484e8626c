"""Tiles of the row kernels (softmax, layer/RMS norm, argmax/argmin, the reductions).

A memory-bound row op moves at the copy bandwidth only if it reads its input once. A
kernel that holds a whole row in registers does (load, reduce, normalise, store); one
that loops over tiles of a long row reads it again to normalise. `row_tile` says
whether the rows of a (A, R, B) view fit one tile and how to tile them. Its decisions
are comparisons of sizes, so in a size-generic recording they become plan guards
(ops/_symbolic.py), never pinned values.
"""

from ..backends import spec
from ._launch import next_pow2, pow2_at_most

# The interpreter holds any row in numpy; a cap only bounds a GPU's registers (the cuda
# driver's `row_tile_cap`).
ROW_TILE_CAP = 1 << 16


def row_tile_cap(arrays=1):
    """The longest row a one-pass kernel holds, for a kernel that keeps `arrays` row-long
    float32 arrays live at once (softmax's backward: the gradient and the output)."""
    return (spec("row_tile_cap") or ROW_TILE_CAP) // arrays


def warps_for(values):
    """Warps for a tile of `values` float32 values held at once: up to 16 a thread up to
    2Ki (4 warps), 32 up to 8Ki (8 warps) and 16Ki (16 warps)."""
    return 4 if values <= 2048 else 8 if values <= 8192 else 16


def row_tile(O, R, B, arrays=1, values=None):
    """(BLOCK_O, BLOCK_R, num_warps) of a one-pass kernel over the O = A * B lanes of a
    contiguous (A, R, B) view, each lane's R elements in one tile of BLOCK_R; None where
    they do not fit (the kernel loops over R). `values`: the elements a program takes
    (short rows several a program), by default the driver's reduction tile."""
    cap = row_tile_cap(arrays)
    if B > 1:
        # A lane's elements are B apart: only neighbouring lanes (b, b + 1) make a load
        # coalesce, so a program takes at least 16 of them.
        if R > cap // 16:
            return None
        br = next_pow2(max(R, 1))
        bo = pow2_at_most(O, min(64, cap // br))
    else:
        if R > cap:
            return None
        br = next_pow2(max(R, 1))
        # Short rows: several per program, up to the driver's reduction tile (the
        # interpreter's cost is per program).
        tile = max(values or spec("reduction_block", R) or 4096, br)
        bo = pow2_at_most(O, tile // br)
    # contiguous rows: warps by row length where the driver says (B > 1: lanes B apart,
    # a tile of up to 64 of them, warps by the tile)
    warps = spec("row_warps", br) if B == 1 else None
    return bo, br, warps or warps_for(bo * br * arrays)


def reduction_tile(O, R, elem_size, arrays=1):
    """(BLOCK_O, BLOCK_R, num_warps) of a one-tile reduction (sum, amax, ...) of O
    contiguous rows of R elements of `elem_size` bytes; None past the cap. A reduction
    reads its input once either way: the tile only sets how much of it is in flight. A
    program takes whole rows, at least `reduction_tile_bytes` of them (cuda: 16 KiB,
    8Ki fp16 values: two 4Ki rows, one 8Ki row; 4Ki float32), or the reduction tile if
    larger (the interpreter's 16Ki values); warps by tile, so each thread loads 16-32
    values at once: 8Ki values with 8 warps are four 16-byte loads a thread in fp16.
    `arrays` 2 for an 8-byte accumulator (int64, float64: two registers a value)."""
    per = (spec("reduction_tile_bytes") or (16 << 10)) // elem_size
    return row_tile(O, R, 1, arrays, values=max(per, spec("reduction_block", R) or 4096))
