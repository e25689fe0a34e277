# dtlab: every target sets up .venv on first use (python3 -m venv + pip install -e .[dev]).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.dtlab-installed
SCALE ?= small

.PHONY: setup figures test lint lab bench readme gpu-check clean-figures

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

## the main job: regenerate every registered figure, figures/results.json and the README's results section
figures: $(STAMP)
	MPLBACKEND=Agg $(PY) -m dtlab figures --scale $(SCALE)

## the whole test suite, notebooks included (CUDA paths under numba's simulator)
test: $(STAMP)
	NUMBA_ENABLE_CUDASIM=1 MPLBACKEND=Agg $(PY) -m pytest tests notebooks --nbval-lax --timeout=900 -q

## style and likely bugs (ruff: pyflakes, pycodestyle, import order, bugbear); config in pyproject.toml
lint: $(STAMP)
	$(VENV)/bin/ruff check dtlab tests notebooks scripts

## JupyterLab on the notebooks
lab: $(STAMP)
	$(PY) -m jupyter lab notebooks/

## benchmarks against scikit-learn and the NumPy reference, per core and whole machine; ratios go to
## figures/results.json and the README's results section
bench: $(STAMP)
	MPLBACKEND=Agg $(PY) -m dtlab bench --scale $(SCALE)

## regenerate only the README's results section from figures/results.json (no new measurements)
readme: $(STAMP)
	$(PY) -m dtlab readme

## on a GPU machine: real-GPU tests, then GPU benchmarks (no venv: uses that machine's python3)
gpu-check:
	bash scripts/gpu_check.sh
