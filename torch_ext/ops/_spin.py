"""A one-program kernel that spins on the GPU's global timer for `ns` nanoseconds
(ops/_tune.py queues its timed launches behind it). Built on first use: the host
driver's interpreter has no timer register and never asks for it. bench/worker.py keeps
its own copy: its torch side must time torch without loading this extension."""

_kernel = None


def spin_kernel():
    global _kernel
    if _kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def _spin(flag, ns):
            t0 = tl.inline_asm_elementwise(
                "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
            )
            t = t0
            while t - t0 < ns:
                t = tl.inline_asm_elementwise(
                    "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
                )
            tl.store(flag, t - t0)

        _kernel = _spin
    return _kernel
