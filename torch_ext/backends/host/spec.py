"""Host driver: kernels run in Triton's interpreter, one Python step per program.

The interpreter's cost is per program instance, not per element, so the host
driver wants few, large blocks.
"""

from typing import Any, Callable


def pointwise_block(numel: int) -> int:
    # One numpy-vectorised program handles up to 64Ki elements.
    return 1 << 16


def multi_tensor_slots(n_lists: int) -> int:
    # Tensors per multi-tensor launch: a program finds its tensor by comparing
    # its id with every slot's start, one interpreted step each.
    return 8


def multi_tensor_iters() -> int:
    # Blocks per multi-tensor program: one (a block is already up to 64Ki elements).
    return 1


def reduction_block(n: int) -> int:
    return 1 << 14


def atomics_in_order() -> bool:
    # Programs run one after another: float atomics add in a fixed order, so the
    # embedding backward keeps its one-launch atomic kernel here (the fixed-order sort
    # path is a program per index, each an interpreted step).
    return True


def reduction_splits(outputs: int, length: int) -> int:
    # The interpreter runs programs one after another: never split.
    return 1


def mm_config(
    m: int, n: int, k: int, dtype: Any, layout: str = "nn"
) -> tuple[int, int, int, int, int]:
    # Big tiles: numpy does each tl.dot in one call.
    return 128, 128, 128, 4, 1


def _clamp_pow2(v: int, lo: int, hi: int) -> int:
    p = 1
    while p < v:
        p *= 2
    return max(lo, min(p, hi))


def conv_config(m: int, n: int, k: int, dtype: Any) -> tuple[int, int, int, int, int]:
    # Implicit-GEMM convolution: a tile as large as the problem (up to a bound), so
    # that the programs and their K loops are few; numpy does each tl.dot at once.
    return _clamp_pow2(m, 16, 512), _clamp_pow2(n, 16, 128), _clamp_pow2(k, 16, 256), 4, 1


def direct_conv_blocks() -> tuple[int, int, int]:
    # Depthwise convolution's direct kernels: (channel block cap, tile elements,
    # rows cap); one program covers up to 16Ki (position, channel) pairs.
    return 256, 1 << 14, 1 << 14


def dot_needs_fp32_inputs(dtype: Any) -> bool:
    # The interpreter's tl.dot goes through numpy, which has no bfloat16.
    import torch

    return dtype == torch.bfloat16


_INTERPRETER_LOCK = __import__("threading").RLock()


def launch_lock() -> Any:
    # Triton's interpreter patches triton.language globally while a kernel
    # runs, so launches from several threads (autograd's backward threads,
    # user threads) must take turns.
    return _INTERPRETER_LOCK


def _fix_interpreter_index() -> None:
    """Triton 3.6's interpreter turns a scalar (a 1-element array) into a
    Python int with int(array), which numpy >= 2.4 refuses, so every kernel
    loop with a runtime bound (`range(0, R, BLOCK)`) fails there. Later
    Tritons squeeze the array first; this does the same for the older ones,
    for as long as a kernel runs (the interpreter restores its patches)."""
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return
    patch = getattr(interpreter, "_patch_lang", None)
    if patch is None or getattr(patch, "_torch_ext_index", False):
        return

    def patched(fn: Callable) -> Any:
        scope = patch(fn)
        if hasattr(scope, "set_attr"):
            scope.set_attr(
                tl.core.tensor, "__index__", lambda self: int(self.handle.data.squeeze())
            )
        return scope

    patched._torch_ext_index = True
    interpreter._patch_lang = patched


def _bf16_round_nearest(data: Any) -> Any:
    """Numbers (any real dtype) -> bfloat16 bits (uint16): through float32 (as torch
    converts), then rounded to nearest even as a GPU converts float32; NaNs stay quiet
    NaNs of the same sign."""
    import numpy as np

    with np.errstate(all="ignore"):
        b = np.asarray(data).astype(np.float32).view(np.uint32)
    rounded = ((b + np.uint32(0x7FFF) + ((b >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = (b & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    return np.where(nan, ((b >> 16) | np.uint32(0x40)).astype(np.uint16), rounded)


def _fix_interpreter_bf16_cast() -> None:
    """Triton's interpreter converts float32 to bfloat16 by truncation (its
    cast passes no rounding mode), and integers and float64 bit for bit (garbage);
    compiled kernels round the value to nearest even.  So that the host driver
    computes the GPU's bfloat16 results (a stored bfloat16, a scalar rounded to a
    bfloat16 tensor's dtype), every cast to bfloat16 rounds the value."""
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return
    builder = getattr(interpreter, "InterpreterBuilder", None)
    cast = getattr(builder, "cast_impl", None)
    if cast is None or getattr(cast, "_torch_ext_rounds", False):
        return

    def cast_impl(self: Any, src: Any, dst_type: Any) -> Any:
        if dst_type.scalar == tl.bfloat16 and src.dtype.scalar != tl.bfloat16:
            return interpreter.TensorHandle(_bf16_round_nearest(src.data), dst_type.scalar)
        return cast(self, src, dst_type)

    cast_impl._torch_ext_rounds = True
    builder.cast_impl = cast_impl


_fix_interpreter_index()
_fix_interpreter_bf16_cast()
