"""A Triton driver that compiles for sm_90 and launches nothing: Triton's compiler (and
ptxas) run on a machine without a GPU. `use()` makes it Triton's active driver for the
rest of the process (smem_audit.py; tests/runtime/test_warmup.py's subprocesses)."""

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
