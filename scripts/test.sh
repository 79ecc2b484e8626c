#!/usr/bin/env bash
# Builds torch_ext if needed, then runs the whole test suite with the CPU
# fallback turned into an error (tests/conftest.py sets TORCH_EXT_FALLBACK=error),
# in TEST_WORKERS processes (pytest-xdist; default 2, one per core of CI's machine).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Tests go out 16 at a time (--maxschedchunk): the long files come first (tests/conftest.py
# LONG_FIRST), and with pytest-xdist's default first share (a quarter of a worker's tests)
# one worker held most of them while the other ran out of work.
exec "${PYTHON:-python3}" -m pytest tests -q -p no:cacheprovider -n "${TEST_WORKERS:-2}" \
  --maxschedchunk 16 "$@"
