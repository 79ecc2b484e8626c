"""Host driver: kernels run in Triton's interpreter, one Python step per program.

The interpreter's cost is per program instance, not per element, so the host
driver wants few, large blocks.
"""


def pointwise_block(numel):
    # One numpy-vectorised program handles up to 64Ki elements.
    return 1 << 16


def reduction_block(n):
    return 1 << 14


def rows_per_program(n_rows, n_cols):
    # Rows handled by one program of row-wise kernels (softmax, norms).
    return max(1, min(n_rows, (1 << 16) // max(1, n_cols)))


def mm_blocks(m, n, k):
    return 128, 128, 128


def dot_needs_fp32_inputs(dtype):
    # The interpreter's tl.dot goes through numpy, which has no bfloat16.
    import torch
    return dtype == torch.bfloat16
