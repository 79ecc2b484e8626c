#!/usr/bin/env bash
# Builds torch_ext if needed, then runs the demo: a model on privateuseone,
# checked against CPU, with a report of what ran natively and what fell back.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m torch_ext.demo "$@"
