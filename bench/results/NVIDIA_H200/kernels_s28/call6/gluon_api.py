import inspect, triton
print("triton", triton.__version__)
try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    print("gluon ok; gl names:", [n for n in dir(gl) if not n.startswith("_")][:200])
    from triton.experimental.gluon.language.nvidia import hopper
    print("hopper:", [n for n in dir(hopper) if not n.startswith("_")])
    from triton.experimental.gluon.language.nvidia.hopper import tma, mbarrier
    print("tma:", [n for n in dir(tma) if not n.startswith("_")])
    print("mbarrier:", [n for n in dir(mbarrier) if not n.startswith("_")])
    for f in ("warp_specialize", "allocate_shared_memory", "NVMMASharedLayout", "BlockedLayout"):
        o = getattr(gl, f, None)
        print(f, inspect.signature(o) if o is not None and callable(o) else o)
    for f in ("warpgroup_mma", "warpgroup_mma_wait", "fence_async_shared"):
        o = getattr(hopper, f, None)
        print(f, inspect.signature(o) if o is not None else None)
    for f in ("async_copy_global_to_shared", "async_copy_shared_to_global", "store_wait"):
        o = getattr(tma, f, None)
        print(f, inspect.signature(o) if o is not None else None)
    for f in ("init", "expect", "wait", "arrive"):
        o = getattr(mbarrier, f, None)
        print(f, inspect.signature(o) if o is not None else None)
    import triton.experimental.gluon.nvidia.hopper as gh
    print("host TensorDescriptor:", hasattr(gh, "TensorDescriptor"))
except Exception as e:
    print("ERR", type(e).__name__, e)
