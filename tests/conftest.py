"""Session-wide settings, applied before torch_ext is imported: two simulated
devices (so privateuseone:1 exists) and the CPU fallback turned into an error
(tests that exercise the fallback switch it with torch_ext.fallback_mode).

tests/ is put on sys.path here, so every test module, in any folder, imports
the shared helpers (device constant, tolerances, CPU-reference comparison) as
`from helpers import ...` (tests/helpers.py). Test files need unique basenames
across tests/ (rootdir import mode, no __init__.py): kernel-level files are
tests/ops/test_<family>_kernels.py, dispatcher-level ones tests/native/test_<family>.py."""

import os
import random
import sys
import zlib

os.environ.setdefault("TORCH_EXT_HOST_DEVICES", "2")
os.environ.setdefault("TORCH_EXT_FALLBACK", "error")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

# Float32 convolutions compute in float32, as the CPU references do. PyTorch's
# cudnn.allow_tf32 defaults to True (TF32 on NVIDIA GPUs) and torch_ext honours it on
# the cuda driver; tests_gpu/test_tf32.py checks that path.
torch.backends.cudnn.allow_tf32 = False

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

RECORD = Path(__file__).resolve().parent.parent / "build" / "op_coverage.txt"


@pytest.fixture(autouse=True)
def _seeded(request):
    """Every test starts from a seed of its own name: random inputs are the same on
    every run and machine (a failure reproduces; CI cannot meet an input no local run
    saw). A test that wants other draws seeds them itself."""
    seed = zlib.crc32(request.node.nodeid.encode())
    random.seed(seed)
    torch.manual_seed(seed)


def _shard():
    """(i, n) of TORCH_EXT_TEST_SHARD="i/n" (i from 1), or None."""
    spec = os.environ.get("TORCH_EXT_TEST_SHARD")
    if not spec:
        return None
    try:
        i, n = (int(v) for v in spec.split("/"))
        if not 1 <= i <= n:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(
            f"TORCH_EXT_TEST_SHARD={spec!r}: expected i/n with 1 <= i <= n, e.g. 1/3"
        ) from None
    return i, n


def pytest_configure(config):
    _shard()  # a malformed value stops the run before anything is collected


# Files with single tests of 20-115 s on CI's 2 cores (session 46): collected first, so
# that pytest-xdist's workers do not end the run one of them waiting for the other on one.
LONG_FIRST = (
    "pipeline/test_variant_build.py",
    "ops/test_backends.py",
    "distributed/test_ddp.py",
    "models/test_demo.py",
    "ops/test_matmul_ws.py",
    "runtime/test_inductor.py",
    "models/test_lengths.py",
    "models/test_zoo.py",
    "bench/test_models_smoke.py",
    "native/test_linalg_svd.py",
    "pipeline/test_test_shards.py",
    "runtime/test_tune.py",
    "distributed/test_fsdp_tp.py",
    "distributed/test_checkpoint.py",
)


def _long_first(item) -> int:
    path = item.nodeid.split("::")[0].removeprefix("tests/")
    return LONG_FIRST.index(path) if path in LONG_FIRST else len(LONG_FIRST)


def pytest_collection_modifyitems(config, items):
    """The files of LONG_FIRST first, in its order (the rest as collected).
    TORCH_EXT_TEST_SHARD=i/n keeps one shard of the tests. Tests marked
    two_devices skip, saying why, where fewer than two devices exist (a one-GPU
    machine); CI's host driver simulates two, so they run there."""
    items.sort(key=_long_first)  # stable: each file's tests keep their order
    shard = _shard()
    if shard:
        # every n-th collected test from the i-th: n runs of a long suite (tests/ on a
        # GPU in calls of limited time) take it all, each a like share of every file
        kept = items[shard[0] - 1 :: shard[1]]
        chosen = {id(item) for item in kept}
        config.hook.pytest_deselected(items=[t for t in items if id(t) not in chosen])
        items[:] = kept
    try:
        import torch
        import torch_ext  # noqa: F401

        count = torch.privateuseone.device_count()
    except Exception:  # no build: kernel-only test runs
        return
    if count >= 2:
        return

    skip = pytest.mark.skip(
        reason=f"needs two privateuseone devices; this machine has {count} "
        "(TORCH_EXT_HOST_DEVICES=2 simulates two on the host driver)"
    )
    for item in items:
        if "two_devices" in item.keywords:
            item.add_marker(skip)


def pytest_sessionstart(session):
    """Record which aten overloads the tests run on the device, for
    `python -m torch_ext.coverage`."""
    try:
        import torch
        import torch_ext  # noqa: F401
    except Exception:  # no build: kernel-only test runs
        return
    if not hasattr(torch.ops.torch_ext, "_coverage_start"):
        return  # tests/ops on bare kernels (a stand-in torch_ext package, no _C)
    torch.ops.torch_ext._coverage_start()
    session.config._torch_ext_recording = True


def pytest_sessionfinish(session, exitstatus):
    if not getattr(session.config, "_torch_ext_recording", False):
        return
    import torch

    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(torch.ops.torch_ext._coverage_report())
