"""The pipeline end to end on a second manifest: tril in Customized mode
(structured_inherits + precomputed, hand-written meta), and a new pointwise
op (hardshrink) added by YAML plus one scalar Triton function. It generates,
builds (a second build folder; ccache reuses the main build's objects) and
runs it in a fresh process with the CPU fallback set to error."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Builds a variant of the extension from a changed manifest: minutes.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
VARIANT = Path(__file__).resolve().parent / "variant"

CUSTOMIZED_TRIL = """\
- func: tril.out
  structured_inherits: MyMetaBase
  precomputed:
  - diagonal -> int var
  dispatch:
    PrivateUse1: MusaTril
  triton: tril
"""

NEW_POINTWISE = """\
- func: hardshrink.out
  stub: hardshrink_stub
  triton: variant_ops:hardshrink
- func: hardshrink
"""


def variant_manifest() -> str:
    text = (REPO / "musa_functions.yaml").read_text()
    # Swap the LegacyMeta tril.out entry for the Customized one.
    text, n = re.subn(r"- func: tril\.out\n(?:  .*\n|  -.*\n)+", CUSTOMIZED_TRIL, text)
    assert n == 1, "the main manifest's tril.out entry changed shape"
    # Drop any existing hardshrink entries; this test adds its own.
    text = re.sub(r"- func: hardshrink[^\n]*\n(?:  .*\n)*", "", text)
    return text + "\n" + NEW_POINTWISE


@pytest.fixture(scope="module")
def variant_build(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("variant")
    manifest = tmp / "musa_functions.yaml"
    manifest.write_text(variant_manifest())
    pkg = tmp / "pkg"
    shutil.copytree(
        REPO / "torch_ext", pkg / "torch_ext", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    env = dict(
        os.environ,
        TORCH_EXT_MANIFEST=str(manifest),
        TORCH_EXT_EXTRA_CSRC=str(VARIANT / "csrc"),
        TORCH_EXT_BUILD_DIR=str(REPO / "build-variant"),
        PYTHONPATH=os.pathsep.join([str(VARIANT), str(REPO)]),
    )
    r = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "-b", str(pkg)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return pkg


def run_on_variant(pkg, code):
    env = dict(
        os.environ, TORCH_EXT_FALLBACK="error", PYTHONPATH=os.pathsep.join([str(pkg), str(VARIANT)])
    )
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=pkg,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r.stdout


def test_customized_tril_uses_our_meta_and_precomputed_value(variant_build):
    out = run_on_variant(
        variant_build,
        """
        import torch, torch_ext
        assert torch_ext.__file__.startswith(%r), torch_ext.__file__
        x = torch.randn(5, 7)
        d = x.to("privateuseone")
        before = torch.ops.torch_ext_variant.tril_meta_calls()
        for k in (-2, 0, 3):
            torch.testing.assert_close(torch.tril(d, k).cpu(), torch.tril(x, k))
        y = d.clone(); y.tril_(1)
        torch.testing.assert_close(y.cpu(), torch.tril(x, 1))
        o = torch.empty(5, 7, device="privateuseone")
        torch.tril(d, -1, out=o)
        torch.testing.assert_close(o.cpu(), torch.tril(x, -1))
        assert torch.ops.torch_ext_variant.tril_meta_calls() - before == 5
        try:
            torch.tril(torch.ones(3, device="privateuseone"))
        except RuntimeError as e:
            assert "Customized meta" in str(e), e
        else:
            raise AssertionError("1-D tril did not raise")
        print("ok")
    """
        % str(variant_build),
    )
    assert "ok" in out


def test_new_pointwise_op_from_yaml_and_scalar_function(variant_build):
    out = run_on_variant(
        variant_build,
        """
        import torch, torch_ext
        torch.manual_seed(0)
        x = torch.randn(33, 17)
        d = x.to("privateuseone")
        torch.testing.assert_close(torch.nn.functional.hardshrink(d, 0.5).cpu(),
                                   torch.nn.functional.hardshrink(x, 0.5))
        # non-contiguous input, out= variant
        o = torch.empty(17, 33, device="privateuseone")
        torch.ops.aten.hardshrink.out(d.t(), 0.25, out=o)
        torch.testing.assert_close(o.cpu(), torch.nn.functional.hardshrink(x.t(), 0.25))
        # 0.30005 is fp16's 0.3: PyTorch compares with lambd in the tensor's dtype
        h = torch.cat([torch.randn(64), torch.tensor([0.30004883, -0.30004883])]).half()
        torch.testing.assert_close(torch.nn.functional.hardshrink(h.to("privateuseone"), 0.3).cpu(),
                                   torch.nn.functional.hardshrink(h, 0.3))
        assert torch_ext.fallback_stats() == {}, torch_ext.fallback_stats()
        print("ok")
    """,
    )
    assert "ok" in out
