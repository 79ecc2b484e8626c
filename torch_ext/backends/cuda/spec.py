"""CUDA driver: compiled Triton kernels, libdevice available.

Tuned values and functions go here by name (see torch_ext/backends/__init__.py).
"""

from typing import Any, Optional

import triton
import triton.language as tl  # noqa: F401  (in scope for jit functions)
from triton.language.extra import libdevice


@triton.jit
def exp(x):
    return libdevice.exp(x)


@triton.jit
def expm1(x):
    return libdevice.expm1(x)


@triton.jit
def log1p(x):
    return libdevice.log1p(x)


@triton.jit
def tanh(x):
    return libdevice.tanh(x)


@triton.jit
def pow(a, b):
    return libdevice.pow(a, b)


@triton.jit
def rint(x):
    return libdevice.rint(x)


@triton.jit
def _f32(x):
    # libdevice takes float32 or float64: halves computed in float32.
    if x.dtype == tl.float64:
        r = x
    else:
        r = x.to(tl.float32)
    return r


@triton.jit
def atan(x):
    return libdevice.atan(_f32(x)).to(x.dtype)


@triton.jit
def asin(x):
    return libdevice.asin(_f32(x)).to(x.dtype)


@triton.jit
def acos(x):
    return libdevice.acos(_f32(x)).to(x.dtype)


@triton.jit
def atan2(y, x):
    return libdevice.atan2(_f32(y), _f32(x)).to(x.dtype)


@triton.jit
def erfinv(x):
    return libdevice.erfinv(_f32(x)).to(x.dtype)


@triton.jit
def fmod(a, b):
    # libdevice's exact fmod: the compiler's float `%` goes through a/b, which
    # overflows to inf for large quotients (the H200 run of tests/native).
    if a.dtype.is_floating():
        r = libdevice.fmod(_f32(a), _f32(b)).to(a.dtype)
    else:
        r = a % b
    return r


_SM_COUNT: dict[int, int] = {}


def _sm_count() -> int:
    """Multiprocessors of the GPU that Triton launches on now (our driver's
    current device, or torch.cuda's when the kernels run without _C)."""
    from triton.runtime import driver

    device = driver.active.get_current_device()
    if device not in _SM_COUNT:
        _SM_COUNT[device] = driver.active.utils.get_device_properties(device)[
            "multiprocessor_count"
        ]
    return _SM_COUNT[device]


def pointwise_tile(numel: int, itemsize: int) -> Optional[tuple[int, int]]:
    """(BLOCK, num_warps) of the flat pointwise kernel: 16-bit tensors that fill the GPU
    in 2Ki tiles with 4 warps (16 values a thread, two 16-byte loads in flight while the
    math runs): 64M bf16 gelu 77% -> 84% of copy bandwidth, its backward 93% -> 98%,
    mul 99% either way; float32 stays at 1Ki, 4 warps (99-103% already). H200,
    tests_gpu/harness/sweep_memory_bound.py."""
    return (2048, 4) if itemsize <= 2 and numel >= 1 << 23 else None


def row_warps(block_r: int) -> int:
    """Warps of a one-pass row program (softmax, layer/RMS norm, one-tile reductions and
    arg-reductions) by its padded row length: 4 up to 1Ki-wide rows (several rows a
    program), 8 up to 8Ki, 16 beyond. GPT-2's 768-wide rows (32768 of fp16) took 8 warps
    before: layer norm 53% -> 78% of copy bandwidth, RMS norm 64% -> 81%, softmax
    74% -> 83%; 4Ki-8Ki rows within 2% of the best (H200, sweep_memory_bound.py)."""
    return 4 if block_r <= 1024 else 8 if block_r <= 8192 else 16


def layer_norm_fwd_warps(block_r: int) -> Optional[int]:
    """Warps of a one-pass layer norm forward where they differ from row_warps: 4 for
    8Ki-wide rows (8192 x 8192 fp16 on an H200, sweep_memory_bound.py, session 17:
    90.6% of copy bandwidth against 86.0% with 8). Its backward keeps 8: it holds two
    row-long arrays, which 4 warps' registers would not."""
    return 4 if block_r == 8192 else None


def arg_lanes_tile(length: int, inner: int, itemsize: int) -> Optional[tuple[int, int]]:
    """(step, warps) of argmax/argmin and max/min(dim) over contiguous
    rows of 16-bit values of at least 4Ki: the kernel that keeps a running winner per
    lane (ops/reduction_arg.py), 1Ki values a step with 4 warps, against the one-tile
    kernel's two reductions over the row: 8192 x 8192 bf16 46.1 us against 71.2 (its
    float32 compares hold twice the registers), fp16 46.5 against 48.3; float32 rows
    keep the one-tile kernel (72.0 us against 72.9 at best); pipelining the steps
    (cp.async, 2-3 stages) lost at 16 bits. H200, tests_gpu/harness/sweep_lanes.py,
    session 24."""
    if inner != 1 or itemsize != 2 or length < 4096:
        return None
    return 1024, 4


def arg_rescan_tile(rows: int, length: int, itemsize: int) -> Optional[tuple[int, int]]:
    """(step, warps) of argmax/argmin and max/min(dim) over fewer contiguous rows than
    multiprocessors, each of at least 4Ki (greedy decoding's argmax over a vocabulary):
    the kernel that keeps each lane's extreme only and reads again the lanes holding
    the row's, up to 8Ki values a step, 16 a thread. 64 x 50257 (H200, session 33,
    tests_gpu/harness/argmax_rescan.py): fp16 11.0 us against 42.6 before (the per-lane
    kernel, 1Ki steps), bf16 17.4 against 34.9, float32 12.2 against 44.9, fp16 with
    ties in many lanes 16.7 against 52.5; torch 21-22. With many rows it does not pay:
    8192 x 8192 fp16 43.8 against 45.8 at best, bf16 48.1 against 46.1, ties 76.6
    against 45.8."""
    if rows >= _sm_count() or length < 4096:
        return None
    step = min(8192, triton.next_power_of_2(length))
    return step, step // 512


def softmax_fwd_warps(block_r: int) -> Optional[int]:
    """Warps of a one-pass softmax / log_softmax forward over contiguous rows where they
    differ from row_warps: 16 for 8Ki-wide rows (8192 x 8192 on an H200, session 24,
    tests_gpu/harness/sweep_lanes.py: fp16 69.8 us against 71.1 with 8, bf16 69.8
    against 70.3; FlagGems' softmax 69.3 in the suite)."""
    return 16 if block_r == 8192 else None


def cross_entropy_block(itemsize: int) -> Optional[int]:
    """Logits a step of the fused cross entropy's forward (one program a row, 4 warps,
    a maximum and a sum reduced each step): 8Ki for 16-bit logits (4096 x 32768 bf16
    on an H200: 76.6 us against 79.3 with 4Ki steps, 85% of copy bandwidth; float32
    the same either way, 132.8 against 133.2). tests_gpu/harness/sweep_lanes.py,
    session 24."""
    return 8192 if itemsize == 2 else None


def rank_sort_budget() -> int:
    """Comparisons (rows x length^2) up to which a sort of rows longer than 2Ki stays the
    one-launch rank sort instead of a merge pass per doubling: 64Mi, a 4096-long row in
    16Mi comparisons (the token indices embedding's backward sorts: 12 merge passes, 19
    launches in all before)."""
    return 1 << 26


def reduction_config(
    outputs: int, length: int, inner: int, elem_size: int
) -> Optional[tuple[int, int, int, int]]:
    """(splits, BLOCK_O, BLOCK_R, num_warps) for reductions over a contiguous
    axis (inner == 1), from tests_gpu/harness/tune_reduce.py on an H200:
    - few outputs, long rows (sum of 64M float32): two programs per SM, each
      a run of 16Ki-element tiles: 75.8 us vs torch's 79.2 (the generic 1024
      programs of 4Ki tiles took 86.0);
    - many rows of >= 4Ki elements: 4Ki tiles with 16 warps: 42.9 us vs 48.6
      with 4 warps on 8192x8192 float16 (torch 59.1).
    Other shapes keep the generic tiling. A config of one program per output tile
    (no split) over rows up to row_tile_cap is replaced by ops/_rows.py's one-tile
    reduction (reduction_tile_bytes): these loops remain for rows past the cap."""
    if inner != 1:
        return None
    sms = _sm_count()
    if outputs < sms and length >= 1 << 16:
        return max(1, -(-2 * sms // outputs)), 1, 1 << 14, 4
    if outputs >= sms and length >= 4096:
        return 1, 1, 4096, 16
    return None


def reduction_tile_bytes() -> int:
    """Bytes of input a one-tile reduction program takes at least (whole rows: ops/_rows.py
    reduction_tile): 16 KiB, an 8Ki fp16 row or two 4Ki ones, 8Ki values with 8 warps,
    so each thread has four 16-byte loads in flight at once (the looped 4Ki tiles with 16
    warps had one: amax 68% of copy bandwidth at 8192x8192 fp16 on an H200). Compiled
    for sm_90 (Triton 3.9), 8Ki-wide rows (8 warps): amax/amin 27 registers in fp16/bf16
    (max.NaN.f16x2 on the packed halves), 31 in float32, sum/mean 29-31; 16Ki rows (16
    warps) 28-34, integers up to 46; no spills. Not yet timed on a GPU."""
    return 16 << 10


def reduction_nan_combine() -> bool:
    """amax/amin (and the inf norms) reduce with a combine that propagates NaN (max.NaN,
    one instruction an element, one cross-thread reduction) rather than tl.max/tl.min
    (which skip NaN) and a second reduction of an is-NaN flag: the interpreter runs a
    custom combine one element at a time, the compiled kernel as fast as tl.max."""
    return True


def row_tile_cap() -> int:
    """The longest row a one-pass row kernel (softmax, layer/RMS norm, argmax: ops/_rows.py)
    holds in registers: 16 warps of 32 threads at 32 float32 values each. Past it the
    kernels loop over the row and read it twice. Compiled for sm_90 (Triton 3.9) at 8192
    and 16384 wide rows the one-pass kernels use at most 64 registers a thread, the
    layer/RMS norm backward (two row-long arrays: a cap of 8192) up to 128, none
    spilling."""
    return 1 << 14


def mm_config(m: int, n: int, k: int, dtype: Any, layout: str = "nn") -> Optional[tuple]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for bf16/fp16 matrix
    products on the GPU, by operand layout ("nn" forward, "nt" input gradient,
    "tn" weight gradient of a linear layer): the best of a sweep over
    transformer shapes on an H100 (4096 tokens; GPT-2 and Llama widths)."""
    import torch

    if dtype not in (torch.float16, torch.bfloat16) or m < 128 or n < 256:
        return None  # ops/matmul.py's default
    if layout == "nt":
        return 128, 128, 64, 8, 3
    return 128, 256, 64, 8, 3 if layout == "nn" else 4


def mm_split_k(tiles: int, k: int) -> Optional[int]:
    """Splits of K for a matrix product of `tiles` output tiles: one wave of programs
    where the tiles alone would fill less than half the multiprocessors and K is long
    (the weight gradients of a linear layer). At most 4: the last program of a tile
    sums the splits' partial tiles alone. On an H200 (Llama, 4096 tokens): 1024 x 1024
    (32 tiles, 4 splits) 40.8 -> 29.4 us; 256 x 1024 (8 tiles) with 16 splits stayed at
    40.7 us, its reduction 2 MB read by one program per tile. Each split keeps >= 256
    of K."""
    sms = _sm_count()
    if tiles * 2 > sms or k < 1024:
        return None
    return min(sms // tiles, 4, k // 256)


def mm_split_k_candidates(tiles: int, k: int) -> list[int]:
    """Split counts of K for the tuner to time beside a matrix product's rule
    (mm_split_k) when its `tiles` output tiles fill under two waves of programs: those
    that keep at most four waves, each split at least 512 of K. At 4096 tokens on an
    H200 (session 19) GPT-2's 768 -> 3072 weight gradient (72 tiles of 128 x 256) ran
    at 66% of cuBLAS and its 3072 -> 768 forward (96) at 69%, one part-filled wave
    each. The partial tiles cost a float32 write and read each: the tuner weighs that.
    Few tiles over a long K (a channels_last 1x1 weight gradient: 512 x 1024 over 6,272
    pixels, 16 tiles) also time 6 and 8 splits, which fill a wave."""
    sms = _sm_count()
    if tiles >= 2 * sms:
        return []
    return [s for s in (2, 3, 4, 6, 8) if tiles * s <= 4 * sms and k // s >= 512]


def multiprocessors() -> int:
    """The GPU's multiprocessors (the current device)."""
    return _sm_count()


def mm_tail_split_candidates(tiles: int, k: int) -> list[tuple[int, int]]:
    """(split, programs a multiprocessor) for the tuner to time where a matrix product's
    `tiles` fill some waves and under half of another: the full waves' tiles run whole
    and only the last wave's are split in K, as many splits as fill that wave (at most
    4, each at least 256 of K), for waves of one or two programs a multiprocessor
    (128 x 256 tiles run one, 128 x 128 two). At 4096 tokens on an H200 (session 20)
    GPT-2's 3072 -> 768 forward (192 tiles of 128 x 128: a wave and 60 tiles) ran at
    68% of cuBLAS, 77% with the last wave split; its weight gradient 71% -> 77%."""
    sms = _sm_count()
    out = []
    for occupancy in (1, 2):
        slots = occupancy * sms
        rem = tiles % slots
        if tiles <= slots or rem == 0 or rem * 2 > slots:
            continue
        split = min(slots // rem, 4, k // 256)
        if split > 1:
            out.append((split, occupancy))
    return out


def conv_wgrad_splits(rows: int, work: int) -> list[int]:
    """Slice counts of a convolution's weight-gradient reduction (ops/conv_igemm_bwd.py)
    for the tuner to time beside its rule's: those that give `work` programs a slice
    one, two or four waves of programs, each slice at least 512 rows of the reduction,
    at most 64 slices (their float32 partials are summed by another launch).
    The rule's (a slice >= 2048 rows, <= 256 programs) left ResNet-50's deep layers on
    fewer programs than multiprocessors (H200: 256->256 3x3 @14, 108 programs)."""
    sms = _sm_count()
    top = max(1, min(64, rows // 512))
    return sorted({max(1, min(top, -(-waves * sms // max(work, 1)))) for waves in (1, 2, 4)})


def norm_backward_programs() -> int:
    """Programs of the layer/RMS norm backward over rows of one tile: two per
    multiprocessor, each summing its rows' weight and bias gradients (partials a second
    launch adds up): GPT-2's 768-wide column sums ran on 12 programs before (H200)."""
    return 2 * _sm_count()


def attention_tiles(head: int, itemsize: int) -> tuple:
    """(BLOCK_M, BLOCK_N, pipeline stages of the attention forward, dK/dV and dQ
    kernels) for heads padded to `head` elements of `itemsize` bytes, within an
    H100/H200's 227 KB of shared memory per block. Compiled for sm_90 (Triton 3.9):
    64x64 tiles with 3 stages take up to 180 KB at 256-byte rows (bf16 head 128), but
    the dQ kernel's 352 KB at bf16 head 256 and 272 KB at float32 head 128 are over
    the limit (such a kernel cannot launch); the rows below stay under 200 KB, the
    dK/dV kernel's also when it adds dQ atomically (attention_dq_atomic)."""
    row = head * itemsize
    if row <= 256:
        return 64, 64, 3, 3, 3
    if row <= 512:  # bf16 head 256, float32 head 128
        return 64, 64, 2, 1, 1
    if row <= 1024:  # float32 head 256, float64 head 128
        return 32, 32, 2, 2, 2
    return 16, 16, 1, 1, 1


def attention_kernel_tiles(
    kind: str,
    head: int,
    itemsize: int,
    dq_atomic: bool = False,
    queries: int = 1 << 30,
    keeps_mask: bool = False,
):
    """(BLOCK_M, BLOCK_N, warps, stages) of one attention kernel ("fwd", "dkdv", "dq"),
    or None for the shared tiles above (ops/attention.py `_kernel_tiles`), for 16-bit
    heads padded to 64 or 128. From tests_gpu/harness/attention_tiles.py on an H200
    (session 19, bf16, causal; each kernel's whole pass in ms, the others on the shared
    64x64 tiles): head 128, 8 x 32 heads x 2048: forward (128, 64, 8 warps) 0.692 against
    0.716, dK/dV (32 queries x 64 keys) 3.07 against 3.84, dQ (64 x 32) 3.33 against
    3.82; at 512 tokens 0.107 / 0.379 / 0.366 against 0.193 / 0.404 / 0.405. Head 64,
    8 x 12 x 2048: dK/dV (32 x 64) 0.657 against 0.707; its forward and dQ stay on the
    shared tiles (128 x 64 forward 0.173 against 0.168, 64 x 32 dQ 1.158 against 0.706).
    The dropout mask is drawn per key position, the same whatever the tiles. With
    dropout (session 20, `ATTN_DROPOUT=0.1`): at head 128 the same picks win (forward
    1.248 ms against 1.537 shared, dK/dV 4.96 against 7.22, dQ 6.38 against 7.24); at
    head 64 the dK/dV kernel that also adds dQ (`dq_atomic`) is fastest on the shared
    tiles (the backward 0.940 ms against 1.064 with 32 x 64, 8 x 12 x 2048). Session 40
    (`kernels_s40/call2/tiles_fwd128.log`, causal, no dropout): the head-128 forward on
    (128, 64, 8 warps, 3 stages) at 8 x 32 x 2048 0.727 ms against 0.766 shared, at 2 x
    32 x 8192 2.380 against 2.607, but at 8 x 32 x 512 0.085 against 0.075 shared (at 1024
    queries 0.228 against 0.223): up to 512 queries the forward takes the shared tiles,
    but where it keeps its dropout mask (`keeps_mask`): the SDPA suite's 8 x 32 x 512 row
    with dropout took 0.4452 ms forward and backward on the shared tiles against 0.4176
    (`kernels_s40/call3` against `call2`)."""
    if itemsize != 2 or head not in (64, 128):
        return None
    if kind == "dkdv":
        if dq_atomic:
            return (64, 128, 8, 2) if head == 128 else None
        return (32, 64, 4, 3)
    if head == 128:
        if kind == "fwd":
            return None if queries <= 512 and not keeps_mask else (128, 64, 8, 3)
        return (64, 32, 4, 3) if kind == "dq" else None
    return None


def attention_dq_atomic(head: int, itemsize: int, dropout: bool, queries: int) -> bool:
    """Whether the attention backward's dQ is added atomically by the dK/dV kernel (no
    second pass over the scores, and no second regeneration of the dropout mask;
    nondeterministic, as CUDA's flash attention) rather than by its own kernel, for
    heads padded to `head` elements of `itemsize` bytes and `queries` query positions.
    With dropout at rows of at most 128 bytes (bf16 head 64), or without from 4096
    queries on: tests_gpu/harness/attention_dq.py on an H200
    (session 20, bf16, causal), the backward with dropout at head 64 1.19x at 8 x 12 x
    2048 and 1.22x at 2 x 12 x 8192; at head 128 0.83-0.87x, and without dropout
    0.80-0.87x at either head. Session 25, with whole tiles added through a descriptor
    (attention_dq_tma) and the dK/dV kernel on 64 x 128 tiles with 8 warps at head 128
    (attention_kernel_tiles), head 128 with dropout from 2048 queries on: 3.385 against
    3.437 ms at 8 x 32 x 2048 and 11.45 against 12.42 at 2 x 32 x 8192; in the kernel
    suite (session 25, calls 3 and 4) 4.46 against 4.51 ms and 15.17 against 16.10, but
    0.493 against 0.456 at 8 x 32 x 512 (without dropout 2.39 against 2.28 and 7.84
    against 8.11 in the harness: left separate, the deterministic way). Session 31,
    without dropout at head 64 (through the descriptor, with its loads): 0.866 against
    0.915 ms at 4 x 12 x 4096, 1.551 against 1.724 at 2 x 12 x 8192, 2.860 against 3.355
    at 1 x 12 x 16384, but 0.511 against 0.505 at 8 x 12 x 2048; at head 128 level (7.892
    against 7.895 at 2 x 32 x 8192): atomic from 4096 queries on at rows of at most 128
    bytes (`bench/results/NVIDIA_H200/kernels_s31/call6/`)."""
    row = head * itemsize
    if not dropout:
        return row <= 128 and queries >= 4096
    return row <= 128 or (row <= 256 and queries >= 2048)


def attention_dq_tma(head: int, itemsize: int) -> bool:
    """Whether the atomic dQ (attention_dq_atomic) adds its tiles through a tensor
    descriptor (one bulk reduction of a float32 tile into L2 by the tensor memory
    accelerator) rather than by element: 16-bit inputs, the measured case (float32 adds
    into dq itself, with no buffer to copy back). tests_gpu/harness/attention_dq.py on
    an H200 (session 25, bf16, causal, dropout 0.1, head 64, with attention_tma's
    loads): the backward 0.845 ms against 0.897 by element at 8 x 12 x 2048, 2.856
    against 3.065 at 2 x 12 x 8192, 0.159 against 0.173 for the model benchmark's Llama
    (8 x 16/4 x 512)."""
    return itemsize == 2


def attention_kv_natural(head: int, itemsize: int, dropout: bool) -> bool:
    """Whether the attention backward's dK/dV kernel computes its scores as queries x
    keys, as the forward does (ops/attention_kernels.py `_kv_natural`: each thread's
    eight scores share one dropout counter, one Philox evaluation where the transposed
    tile needs two; P and dS are transposed for their products), rather than as keys x
    queries. With dropout at rows of at most 128 bytes (bf16 head 64):
    tests_gpu/harness/attention_dq.py on an H200 (session 31, bf16, causal, dropout 0.1,
    dQ added through a descriptor): the backward 0.865 -> 0.658 ms at 8 x 12 x 2048,
    3.014 -> 2.135 at 2 x 12 x 8192, 0.105 -> 0.084 at 8 x 12 x 512, 0.159 -> 0.113 for
    the model benchmark's Llama (8 x 16/4 x 512). Without dropout the same or slower
    (0.513 -> 0.530 ms at 8 x 12 x 2048); at head 128 (255 registers either way) 1.1-2.6x
    slower."""
    return dropout and head * itemsize <= 128


def attention_keep_dropout_mask(head: int, itemsize: int) -> bool:
    """Whether the attention forward with dropout keeps its mask for the backward (under
    TORCH_EXT_ATTENTION_DROPOUT_MASK=auto, memory allowing: ops/attention.py
    keeps_dropout_mask), for heads padded to `head` elements of `itemsize` bytes: where the
    dK/dV kernel computes keys x queries (attention_kv_natural false with dropout), whose
    tile draws each Philox counter twice. tests_gpu/harness/attention_mask.py on an H200
    (session 32, bf16, causal, dropout 0.1): at head 128, 8 x 32 x 2048, the forward
    1.077 -> 1.358 ms keeping it, the backward 3.396 -> 2.686 reading it (the SDPA suite:
    4.486 -> 3.965 ms forward and backward, 0.456 -> 0.423 at 512 queries); at head 64,
    8 x 12 x 2048, the forward 0.326 -> 0.415 against a backward 0.658 -> 0.608 at best
    (suite 0.989 -> 1.165 ms): drawn again."""
    return head * itemsize > 128


def attention_tma(kind: str, head: int, itemsize: int, dq_atomic: bool) -> bool:
    """Whether the attention `kind` ("fwd", "bwd") kernels read q, k, v and dO through
    tensor descriptors (ops/attention.py `_descriptors`), for heads padded to `head`
    elements of `itemsize` bytes: only the backward that adds dQ atomically at rows of
    at most 128 bytes. tests_gpu/harness/attention_dq.py on an H200 (session 25, bf16,
    causal): that kernel at head 64 1.630 against 1.959 ms with pointer loads at 2 x 12
    x 8192 without dropout, 0.845 against 0.842 at 8 x 12 x 2048 with; at head 128
    (64 x 128 tiles, 8 warps) slower, 4.06 against 3.39 ms at 8 x 32 x 2048 with
    dropout; the forward slower too (0.817 against 0.720 ms at 8 x 32 x 2048 head 128,
    2.601 against 2.366 at 2 x 32 x 8192), the separate dK/dV and dQ kernels within 2%
    either way."""
    return kind == "bwd" and dq_atomic and head * itemsize <= 128


def attention_heavy_first(kind: str) -> bool:
    """Whether the causal `kind` ("fwd", "dq") attention kernel takes its query tiles
    heaviest first (ops/attention.py `_heavy_first`): the dQ kernel only.
    tests_gpu/harness/attention_order.py on an H200 (session 40, bf16, causal, the SDPA
    suite's configurations): the backward at head 128 2.358 -> 2.335 ms at 8 x 32 x 2048
    and 8.287 -> 8.050 at 2 x 32 x 8192, head 64 0.518 -> 0.509 at 8 x 12 x 2048, the
    others within 0.5%; the forward at head 128 slower (0.727 -> 0.749 ms at 8 x 32 x
    2048, 2.411 -> 2.458 at 2 x 32 x 8192), at head 64 from 1.4% faster to level."""
    return kind == "dq"


def attention_grouped_min_programs() -> int:
    """Attention backward with grouped heads: the dK/dV programs (key blocks x batch x
    key heads) below which each query head keeps its own programs (and a group sum
    after) rather than one program looping over its group: one per multiprocessor
    (bench/models' Llama, 8 x 4 key heads x 8 key blocks = 256 programs, is grouped on
    an H100's 132; a batch of 1 at 512 tokens, 32 programs, is not)."""
    return _sm_count()


def tune_spin_ns() -> int:
    """How long the tuner holds the stream before its timed launches (ops/_tune.py
    _hold_stream): 2 ms, more than the host takes to queue a candidate's five launches
    through Python (tens of microseconds each)."""
    return 2_000_000


def autotune() -> bool:
    # Timings on a GPU mean something: ops/_tune.py times tile candidates here
    # (TORCH_EXT_AUTOTUNE=auto).
    return True


def batch_norm_resident(elem_size: int, backward: bool) -> tuple[int, int, int, int]:
    """(lanes a program, least programs, lanes a warp, wide lanes) of batch norm's
    one-launch kernels (ops/batch_norm.py `_Plan.resident`): a channel's elements padded
    to powers of two, up to 8Ki float32 lanes a program (4Ki for float64), 32 values a
    thread forward, 16 backward (x and dy both held), channels paired while at least
    one program per multiprocessor is left. ResNet-50's 7x7 and 14x14 NCHW layers at
    batch 32 (2Ki and 8Ki lanes a channel) take it. Up to 32Ki lanes (wide: one
    channel block a program, 16 warps) it also ran faster than the barrier or
    two-launch kernels on an H200 (session 29, tests_gpu/harness/bn_paths.py, call 4):
    NCHW 28x28 forward 128 channels 11.9 -> 5.8 us, 512 26.9 -> 23.8; backward 11.9 ->
    6.5, 47.7 -> 31.4; channels_last 7x7 (16 channels of 1,568 rows a program) forward
    2048 channels 12.8 -> 8.2 us, backward 512 channels 11.8 -> 10.3. float64 keeps
    its 4Ki."""
    lanes = 8192 if elem_size <= 4 else 4096
    wide = 32768 if elem_size <= 4 else lanes
    return lanes, _sm_count(), 512 if backward else 1024, wide


def batch_norm_coop(
    elem_size: int, backward: bool, channels_contiguous: bool = False, channels: int = 0
) -> tuple[int, int]:
    """(most bytes of activations read, programs a multiprocessor) of batch norm's
    one-launch kernels whose programs wait for their channel block's others
    (ops/batch_norm_coop.py): 26 MB (a ResNet-50 map of 25.7 MB at batch 32 in bf16;
    backward x and dy together), so that the second pass finds its items in the 50 MB
    L2; two programs a multiprocessor, each at most 128 registers a thread
    (batch_norm.COOP_MAXNREG): all resident at once, as the barrier needs. Channels
    contiguous (channels_last) and at most 256 of them: one program a multiprocessor,
    fewer partials to merge (H200, session 38, tests_gpu/harness/bn_paths.py `coop1`:
    32x64x56x56 forward 19.8 -> 15.7 us, backward 19.1 -> 16.9; 32x128x28x28 15.3 -> 12.8,
    15.1 -> 12.9; 32x256x28x28 17.0 -> 15.0, 18.0 -> 16.2; 32x256x14x14 backward 12.9 ->
    10.4; with 512 and 1024 channels it lost: 32x1024x14x14 16.1 -> 18.4, 17.8 -> 23.2)."""
    return 26 << 20, 1 if channels_contiguous and 0 < channels <= 256 else 2


def batch_norm_stages(elem_size: int, items: int) -> int:
    """Stages of the software pipeline (Triton's, through shared memory) of a batch norm
    loop over `items` items a program (the split reductions, the one-launch kernels'
    passes): 4 from 12 items. With one, a program waits a DRAM latency an item. On an
    H200 (session 35, tests_gpu/harness/bn_paths.py): NCHW 32x64x112x112 forward 51.7 ->
    48.5 us, 32x128x56x56 23.6 -> 20.7; channels_last 32x64x112x112 forward 58.6 ->
    53.5, backward 84.9 -> 77.6; loops of 7-10 items 3-4% slower with 4 stages."""
    return 4 if items >= 12 else 1


def batch_norm_tiling(
    elem_size: int, channels_contiguous: bool = False
) -> tuple[int, int, int, int, Optional[int]]:
    """(tile lanes, programs of a split reduction, partial elements a merge step reads,
    num_warps, items of a normalise / dx program) for batch norm (ops/batch_norm.py).
    A tile is 8 KB of the input (16 bf16 values a thread at 8 warps): the reductions
    keep two float32 accumulators a lane, so that is about what registers allow while
    three or four programs share a multiprocessor; four programs per multiprocessor
    (a wave and some) hide DRAM latency in the split reductions. A merge step reads
    4096 partials (at most 4 steps: 16Ki partials, 192 KB, for the last program of
    a channel block to read alone). The normalise and dx launches are pointwise: one
    tile a program. On an H200 no other tiling moved ResNet-50's shapes by more than a
    few points (session 23, tests_gpu/harness/sweep_conv_bn.py; session 35 with the
    pipelined loops, bn_stats_probe.py). Channels contiguous (channels_last): two
    programs a multiprocessor, each with twice the items (H200, session 38,
    tests_gpu/harness/bn_paths.py `two p2`: backward 32x128x56x56 49.3 -> 43.7 us,
    32x512x28x28 48.9 -> 43.7; forward 32x64x112x112 54.1 -> 52.5, 32x256x56x56 54.2 ->
    52.3; three programs no better)."""
    programs = (2 if channels_contiguous else 4) * _sm_count()
    return max(1024, 8192 // elem_size), programs, 4096, 8, 1


_ARCH: dict[int, int] = {}


def _arch() -> int:
    """The current device's compute capability as Triton numbers it (90: Hopper), asked
    once per device (the matrix products ask on every Python-path call)."""
    from triton.runtime import driver

    device = driver.active.get_current_device()
    if device not in _ARCH:
        _ARCH[device] = driver.active.get_current_target().arch
    return _ARCH[device]


def mm_tma() -> bool:
    """Matrix products may take ops/matmul_tma.py's TMA kernel (tuned beside the pointer
    kernel): GPUs of compute capability 9.0 (Hopper) and later."""
    return _arch() >= 90


def mm_ws() -> bool:
    """Matrix products may take ops/matmul_ws.py's warp-specialised Gluon kernel (tuned
    beside the others): Hopper (compute capability 9.0) only, whose wgmma it issues."""
    return _arch() == 90
