#!/usr/bin/env bash
# The whole test suite (make test), as two pytest processes side by side on the machine's cores:
#   - the notebooks: the browser suite (tests/browser: every notebook in JupyterLab in Chromium) and every
#     notebook headless under nbval; mostly a notebook's kernel computing and Chromium drawing;
#   - everything else in tests/.
# Each alone leaves a core idle most of the time (numba's single-thread kernels, the CUDA simulator's GIL,
# the Lab's waits), so together they take about the time of the longer one instead of the sum (CI: 29 min
# as one process). The notebooks' output is kept in a log and printed after the rest's; the exit status
# fails if either failed.
# Usage: scripts/test_suite.sh PYTHON [extra pytest arguments for both]
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${1:?usage: scripts/test_suite.sh PYTHON [pytest args]}"
shift
export DTLAB_REQUIRE_PEERS=1 NUMBA_ENABLE_CUDASIM=1 MPLBACKEND=Agg
LOG_DIR=figures/_scratch
mkdir -p "$LOG_DIR"
NOTEBOOK_LOG="$LOG_DIR/test-notebooks.log"

"$PY" -m pytest tests/browser notebooks --nbval-lax --timeout=900 -q --durations=15 -p no:cacheprovider "$@" \
  >"$NOTEBOOK_LOG" 2>&1 &
notebooks_pid=$!
"$PY" -m pytest tests --ignore=tests/browser --timeout=900 -q --durations=30 "$@"
rest=$?
wait "$notebooks_pid"
nb=$?
echo
echo "=== the notebooks: tests/browser and nbval (run beside the rest; log $NOTEBOOK_LOG) ==="
cat "$NOTEBOOK_LOG"
echo
echo "=== make test: the rest exited $rest, the notebooks $nb ==="
[ "$rest" -eq 0 ] && [ "$nb" -eq 0 ]
