"""The Gluon attention prototypes of tests_gpu/harness/ (timed on an H200 in session 31,
not in the product) still compile for sm_90 with the installed Triton. Compile-only (no
GPU needed); here rather than in CI's suite, whose 2 cores they took 38 s of (session
46)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _harness(script, **env):
    env = dict(os.environ, **env)
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "tests_gpu", "harness", script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.parametrize(
    "script,tiles",
    [("attention_gluon.py", "64x128w8s2"), ("attention_gluon_fwd.py", "128x128w8s2")],
)
def test_gluon_attention_prototypes_compile_for_hopper(script, tiles):
    """The Gluon attention backward and forward prototypes (tests_gpu/harness/, timed on
    an H200 in session 31, not in the product) still compile for sm_90 with the installed
    Triton: heads 64 and 128, bf16 and fp16, causal or not, within 227 KB of shared
    memory, without spills, and (the forward) with its products left running across a
    wait (ptxas did not serialize them)."""
    r = _harness(script, GL_COMPILE_ONLY="1", GL_TILES=tiles)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert r.stdout.count(" 0 B spilled") == 8, r.stdout
    assert "SERIALIZED" not in r.stdout and "OVER" not in r.stdout, r.stdout
