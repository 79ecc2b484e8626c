"""Whether the 1x1 weight-gradient kernel (ops/conv_gemm.py) compiles, for sm_90 and
without a GPU, to pipelined loads (cp.async) with tensor-core products (wgmma) on
ResNet-50's layouts: NCHW 28x28 (784 pixels, divisible by 16), NCHW 14x14 (196: told
its divisibility by 4, see _common.pixel_alignment), NCHW 7x7 (49: single elements, not
pipelined: what `via` channels_last is tuned against) and channels_last 14x14; and the
implicit GEMM's weight gradient (ops/conv_igemm_bwd.py) of a 3x3 layer and of a 1-d
convolution, with the pixel arithmetic by division and by fast division (which must
compile: scalar arguments equal to 1 become constants there, never under the
interpreter); and a stride-2 3x3 input gradient by phases (ops/conv_igemm.py) and
by the full gather. A line per case: name, wgmma, cp.async, shared bytes. Then batch
norm's kernels on NCHW 14x14, 28x28 and 112x112 maps: the narrowest of the activation's global
loads (or asynchronous copies, in pipelined loops) each issues (bytes; 2 = element by element).

    python tests_gpu/harness/pipeline_audit.py
"""

import os
import re
import sys
import types

os.environ["TORCH_EXT_DRIVER"] = "cuda"  # the cuda driver's specialisations

import torch  # noqa: E402

import compile_only  # noqa: E402  (beside this file)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_pkg = types.ModuleType("torch_ext")  # the kernels without the extension (no GPU here)
_pkg.__path__ = [os.path.join(ROOT, "torch_ext")]
sys.modules["torch_ext"] = _pkg
compile_only.use()

from torch_ext.backends.cuda import spec as cuda_spec  # noqa: E402
from torch_ext.ops import batch_norm, conv_gemm, conv_igemm, conv_igemm_bwd  # noqa: E402

cuda_spec._sm_count = lambda: 132
seen = []


def compiled(kernel, grid, *args, philox=None, grid_syms=None, **kwargs):
    c = kernel.warmup(*args, grid=grid, **kwargs)
    seen.append(("wgmma" in c.asm["ptx"], "cp.async" in c.asm["ptx"], c.metadata.shared))


for module in (conv_gemm, conv_igemm_bwd, conv_igemm):
    module.launch = compiled
    module.sum_slices = lambda buf, dtype: buf[0]
CFG = (128, 128, 64, 8, 3, 12, 0)  # tiles, warps, stages, slices, in place
for name, hw, fmt in (
    ("nchw_28", 28, torch.contiguous_format),
    ("nchw_14", 14, torch.contiguous_format),
    ("nchw_7", 7, torch.contiguous_format),
    ("channels_last_14", 14, torch.channels_last),
):
    x = torch.empty(32, 256, hw, hw, dtype=torch.bfloat16).contiguous(memory_format=fmt)
    dy = torch.empty(32, 1024, hw, hw, dtype=torch.bfloat16).contiguous(memory_format=fmt)
    seen.clear()
    conv_gemm.pointwise_weight_grad(dy, x, (1024, 256, 1, 1), CFG)
    wgmma, cp_async, shared = seen[0]
    print(f"{name} wgmma={wgmma} cp.async={cp_async} shared={shared}", flush=True)

for name, x_shape, w_shape in (
    ("wgrad_3x3", (32, 128, 28, 28), (128, 128, 3, 3)),
    ("wgrad_1d", (8, 64, 100), (64, 64, 3)),
):
    nd = len(x_shape) - 2
    x = torch.empty(x_shape, dtype=torch.bfloat16)
    dy = torch.empty(x_shape[0], w_shape[0], *x_shape[2:], dtype=torch.bfloat16)
    for fast in (False, True):
        conv_igemm_bwd.tuned = lambda f, k, c, r, d, fast=fast: (128, 64, 64, 4, 4, 12, fast)
        seen.clear()
        conv_igemm_bwd.conv_weight_grad(dy, x, w_shape, [1] * nd, [1] * nd, [1] * nd, 1)
        wgmma, cp_async, shared = seen[0]
        tag = "_fastdiv" if fast else ""
        print(f"{name}{tag} wgmma={wgmma} cp.async={cp_async} shared={shared}", flush=True)

conv_igemm._result = lambda y, fmt: y
w = torch.empty(128, 128, 3, 3, dtype=torch.bfloat16)
dy = torch.empty(32, 128, 28, 28, dtype=torch.bfloat16)
for phase in (True, False):
    conv_igemm.tuned = lambda f, k, c, r, d, phase=phase: (128, 128, 64, 8, 3, 1, phase)
    seen.clear()
    conv_igemm.conv_scatter(dy, w, None, [2, 2], [1, 1], [1, 1], 1, [56, 56])
    wgmma, cp_async, shared = seen[0]
    print(f"dgrad_s2{'_phases' if phase else ''} wgmma={wgmma} cp.async={cp_async} "
          f"shared={shared}", flush=True)  # fmt: skip


WIDTH = {"b16": 2, "b32": 4, "v2.b32": 8, "v4.b32": 16}


def loads(kernel, grid, *args, philox=None, grid_syms=None, **kwargs):
    ptx = kernel.warmup(*args, grid=grid, **kwargs).asm["ptx"]
    kinds = re.findall(r"ld\.global(?:\.cg)?\.((?:v[24]\.)?b(?:16|32))", ptx)
    # a pipelined loop's loads are asynchronous copies to shared memory (their bytes last)
    copies = re.findall(r"cp\.async\.c[ag]\.shared\.global\s*\[[^]]*\],\s*\[[^]]*\],\s*(\w+)", ptx)
    widths = [WIDTH[k] for k in kinds if k != "b32"] + [int(n, 0) for n in copies]
    seen.append((kernel.fn.__name__, min(widths), kinds))


batch_norm.launch = loads
batch_norm.arrival_counters = lambda name, device: torch.zeros(1024, dtype=torch.int32)
for c, hw in ((256, 14), (128, 28), (64, 56), (64, 112)):
    x = torch.empty(32, c, hw, hw, dtype=torch.bfloat16)
    w, b, rm, rv = (torch.empty(c) for _ in range(4))
    seen.clear()
    batch_norm.bn_forward(x, w, b, rm, rv, True, 0.1, 1e-5)
    batch_norm.bn_backward(x, x, w, rm, rv, True, 1e-5, [True, True, True], False)
    widths = {name: width for name, width, _ in seen}
    print(f"bn_{hw} " + " ".join(f"{k}={v}" for k, v in sorted(widths.items())), flush=True)
