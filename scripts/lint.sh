#!/usr/bin/env bash
# Style checks CI runs: ruff (lint + format) on Python, clang-format on C++.
# The tool versions are pinned in pyproject.toml's test extra.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -m pip install -q --disable-pip-version-check "ruff==0.14.5" "clang-format==19.1.7" 2>&1 |
  grep -v -i "warning" || true
"$PY" -m ruff check .
"$PY" -m ruff format --check .
CLANG_FORMAT=$("$PY" -c "import sysconfig; print(sysconfig.get_path('scripts'))")/clang-format
find csrc -name '*.cpp' -o -name '*.h' | xargs "$CLANG_FORMAT" --dry-run --Werror
echo "lint: ruff and clang-format clean"
