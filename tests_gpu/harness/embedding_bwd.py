"""Embedding's backward on the GPU (the deterministic sort-and-sum path cuda always takes)
against torch's on `cuda`: host milliseconds a call with a synchronisation (median of 20)
and the largest difference, at GPT-2's and Llama's training shapes.

    TORCH_EXT_DRIVER=cuda python tests_gpu/harness/embedding_bwd.py"""

import functools
import time

import torch

import torch_ext  # noqa: F401


def time_ms(fn, reps=20):
    """Median host milliseconds of fn() and a device synchronisation (both sides alike:
    our launches go to the same GPU)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[reps // 2]


for tokens, vocab, dim in ((8192, 50257, 768), (8192, 32000, 1024), (2048, 50257, 768)):
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, vocab, (tokens,), generator=g)
    grad = torch.randn(tokens, dim, generator=g).to(torch.bfloat16)
    bwd = torch.ops.aten.embedding_dense_backward
    ref = functools.partial(bwd, grad.cuda(), idx.cuda(), vocab, -1, False)
    mine = functools.partial(
        bwd, grad.to("privateuseone"), idx.to("privateuseone"), vocab, -1, False
    )
    diff = (mine().cpu().float() - ref().cpu().float()).abs().max().item()
    print(
        f"{tokens} tokens, {vocab}x{dim} bf16: ours {time_ms(mine):.3f} ms, torch cuda "
        f"{time_ms(ref):.3f} ms; max |diff| {diff:.3g}"
    )
