"""torch.distributed on privateuseone: the c10d backend "torch_ext".

Registered at `import torch_ext`, so any of these works::

    dist.init_process_group(backend="torch_ext")
    dist.init_process_group(backend="cpu:gloo,privateuseone:torch_ext")
    dist.init_process_group()              # privateuseone -> torch_ext, cpu -> gloo
    dist.init_process_group(device_id=torch.device("privateuseone", rank))

Every collective runs on gloo (csrc/distributed/GlooBridge.cpp): under the
host driver gloo works on the device's own memory (zero-copy CPU views);
under the cuda driver, or with host memory protection, it is staged through
host copies. CPU tensors given to this backend go to gloo unchanged.

`torch.distributed.checkpoint` needs one narrow fix where CUDA is available as well
(its default writer would skip our tensors when staging to the CPU): checkpoint.py.
"""

import torch.distributed as dist

from torch_ext.distributed import checkpoint

BACKEND = "torch_ext"

__all__ = ["BACKEND", "is_available"]


def is_available() -> bool:
    return dist.is_available() and hasattr(dist, "ProcessGroupGloo")


def _create_backend(store, rank, size, timeout):
    from torch_ext import _C

    gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
    return _C._gloo_bridge(gloo, rank, size)


def _register():
    if not is_available() or BACKEND.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND, _create_backend, devices=["cpu", "privateuseone"])
    # init_process_group() with no backend takes default_device_backend_map,
    # which register_backend filled for privateuseone (cpu keeps gloo).
    dist.Backend.default_device_backend_map.setdefault("privateuseone", BACKEND)


_register()
checkpoint.install()  # dcp.save where CUDA is available too: see checkpoint.py
