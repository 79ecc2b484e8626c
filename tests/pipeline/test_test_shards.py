"""TORCH_EXT_TEST_SHARD (tests/conftest.py): n shards of a collection are disjoint and
together the whole of it; a malformed value is a usage error that names it."""

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _collect(shard=None):
    env = dict(os.environ)
    env.pop("TORCH_EXT_TEST_SHARD", None)
    if shard:
        env["TORCH_EXT_TEST_SHARD"] = shard
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", str(TESTS / "codegen" / "test_errors.py")],
        capture_output=True, text=True, cwd=TESTS.parent, env=env, timeout=300,
    )  # fmt: skip
    return r, [line for line in r.stdout.splitlines() if "::" in line]


def test_shards_split_the_collection():
    _, whole = _collect()
    assert len(whole) > 10
    shards = [_collect(f"{i}/3")[1] for i in (1, 2, 3)]
    assert all(shards) and sum(map(len, shards)) == len(whole)
    assert sorted(sum(shards, [])) == sorted(whole)
    assert shards[0] == whole[0::3]


def test_a_bad_shard_names_the_variable():
    r, ids = _collect("4/3")
    assert r.returncode != 0 and not ids, ids
    assert "TORCH_EXT_TEST_SHARD='4/3'" in r.stdout + r.stderr
