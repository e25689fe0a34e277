#!/usr/bin/env bash
# The library as a user installs it: a fresh venv, `pip install .` with no extras (no JupyterLab, ipywidgets or
# matplotlib), every estimator fitted and predicted, Forest.predict; then `pip install .[dask]` and a Dask fit.
# Run by .ci/run before the test suite. Usage: scripts/base_install_check.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${1:-python3}"
VENV="$(mktemp -d)/base-venv"
trap 'rm -rf "$(dirname "$VENV")"' EXIT
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet .
CHECK="$PWD/scripts/base_install_check.py"
# from outside the checkout, so that the installed dtlab is the one imported
(cd "$(dirname "$VENV")" && "$VENV/bin/python" "$CHECK")
"$VENV/bin/python" -m pip install --quiet ".[dask]"
(cd "$(dirname "$VENV")" && "$VENV/bin/python" "$CHECK" --dask)
