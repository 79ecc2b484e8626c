"""A Triton driver that compiles for sm_90 and launches nothing: Triton's compiler (and
ptxas) run on a machine without a GPU. `use()` makes it Triton's active driver for the
rest of the process (smem_audit.py; tests/runtime/test_warmup.py's subprocesses);
`registers(cubin)` reads a compiled kernel's registers and spills and
`wgmma_overlaps(cubin)` whether ptxas kept its tensor-core products asynchronous, both
through `cuobjdump` (attention_gluon*.py, smem_audit.py). `COMPILE_ONLY_STOP=llir`
stops each compile at LLVM IR (no PTX, no cubin: shared memory only)."""

import os

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
    if os.environ.get("COMPILE_ONLY_STOP") == "llir":
        _stop_after_llir()


def _stop_after_llir():
    """Compile to LLVM IR only (`COMPILE_ONLY_STOP=llir`): shared memory is known there
    (Triton's make_llir sets it), and LLVM's PTX and ptxas, most of the time of a large
    kernel, are skipped; there is no PTX or cubin to read registers from. The placeholders
    would poison a Triton cache that a full compile later reads: use a cache folder of
    its own (TRITON_CACHE_DIR)."""
    import re

    from triton.backends.nvidia.compiler import CUDABackend

    def make_ptx(self, src, metadata, opt, capability):
        metadata["name"] = re.search(r"define [^@]*@([\w$.]+)\(", src).group(1)
        return "// compiled to LLVM IR only"

    CUDABackend.make_ptx = make_ptx
    CUDABackend.make_cubin = lambda self, src, metadata, opt, capability: b""


def cuobjdump(cubin, flag):
    """cuobjdump's output for a compiled kernel (`-res-usage`, `-sass`), or "" without
    the tool (it ships with Triton)."""
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
