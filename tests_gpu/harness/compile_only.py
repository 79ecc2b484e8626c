"""A Triton driver that compiles for sm_90 and launches nothing: Triton's compiler (and
ptxas) run on a machine without a GPU. `use()` makes it Triton's active driver for the
rest of the process (smem_audit.py; tests/runtime/test_warmup.py's subprocesses);
`registers(cubin)` reads a compiled kernel's registers and spills and
`wgmma_overlaps(cubin)` whether ptxas kept its tensor-core products asynchronous, both
through `cuobjdump` (attention_gluon*.py, smem_audit.py)."""

from triton.backends.compiler import GPUTarget
from triton.runtime import driver


class CompileOnly:
    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0


def use():
    driver.set_active(CompileOnly())


def cuobjdump(cubin, flag):
    """cuobjdump's output for a compiled kernel (`-res-usage`, `-sass`), or "" without
    the tool (it ships with Triton)."""
    import os
    import subprocess
    import tempfile

    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    if not os.path.exists(tool):
        return ""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool, flag, f.name], capture_output=True, text=True).stdout


def registers(cubin):
    """(registers per thread, bytes of local memory: spills) from cuobjdump, or (0, 0)."""
    import re

    found = re.search(r"REG:(\d+).*?LOCAL:(\d+)", cuobjdump(cubin, "-res-usage"))
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def wgmma_overlaps(cubin):
    """Whether some wgmma wait leaves a product running: ptxas serializes every wgmma
    (warning C7514) by turning each wait into `WARPGROUP.DEPBAR.LE gsb0, 0x0`."""
    import re

    return re.search(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x[1-9]", cuobjdump(cubin, "-sass")) is not None
