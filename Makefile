# dtlab: every target sets up .venv on first use (python3 -m venv + pip install -e .[dev]).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.dtlab-installed
PEERS := .peers
PEERS_STAMP := $(PEERS)/.installed
GPU_COMPILE_STAMP := $(VENV)/.dtlab-gpu-compile
SCALE ?= small

.PHONY: setup git-filter figures test test-browser screens book lint lab bench peers readme gpu-check gpu-compile clean-figures

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,lab]"
	@# the workbench (figure producers, benchmarks, peers, the notebooks' widgets) is not part of the installed
	@# library: the venv finds it in this checkout, so that notebooks, scripts and tests import it from anywhere
	echo "$(CURDIR)" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/dtlab-workbench.pth"
	touch $(STAMP)

## the venv, and the nbstripout git filter (.gitattributes): notebooks stay committed without outputs while
## people run them, so `git status` stays clean
setup: $(STAMP) git-filter

git-filter: $(STAMP)
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean '"$(abspath $(PY))" -m nbstripout --keep-id --extra-keys metadata.language_info' && \
	  git config filter.nbstripout.smudge cat && \
	  git config diff.ipynb.textconv '"$(abspath $(PY))" -m nbstripout --keep-id --extra-keys metadata.language_info -t' && \
	  echo "nbstripout git filter installed: notebook outputs never reach git"; \
	else echo "not a git checkout: no nbstripout filter installed"; fi

## the main job: regenerate every registered figure, figures/results.json and the README's results section
figures: $(STAMP)
	MPLBACKEND=Agg $(PY) -m workbench figures --scale $(SCALE)

## the whole test suite, notebooks included (CUDA paths under numba's simulator); a missing peer (XGBoost,
## LightGBM, LIBLINEAR, Dask, pystreed, pycontree, TL2cgen, treelite, and the builds of `make peers`:
## liblinear-multicore, lleaves) fails its tests instead of skipping them (tests/conftest.py), so the peers of
## .peers/ are built first. The notebooks (browser suite and nbval) run as a second pytest process beside the
## rest (scripts/test_suite.sh).
test: $(STAMP) $(PEERS_STAMP)
	scripts/test_suite.sh $(PY)

## only the browser suite: every notebook in JupyterLab in Chromium; screenshots into figures/_scratch/screens/
test-browser: $(STAMP)
	$(PY) -m pytest tests/browser -m browser -v

## regenerate the browser suite's captures of whole notebooks (figures/screens/*.png: the README's gallery)
## and the notebooks' run times (figures/screens/times.json: Run All and slider in JupyterLab, then each notebook
## headless under nbval), and notebooks/README.md's table from them. `make test` writes none of these (git status
## stays clean). The book's test (tests/browser/test_book.py) is make book's, not run here.
screens: $(STAMP)
	DTLAB_SCREENS_DIR=figures/screens DTLAB_REQUIRE_BROWSER=1 $(PY) -m pytest tests/browser/test_notebooks_in_lab.py -m browser -v
	$(PY) scripts/notebook_times.py headless
	$(PY) scripts/notebook_times.py readme

## the notebooks as a static site for readers without Python (scripts/build_book.py): every notebook executed
## headless (widget state kept), converted to HTML in book/ (git-ignored; book/index.html: the contents, in the
## course order of notebooks/README.md), no network needed; fails when a cell fails; then its Chromium test
## (tests/browser/test_book.py) on book/: every page loads, every figure is drawn, no error output
book: $(STAMP)
	$(PY) scripts/build_book.py --out book
	DTLAB_BOOK_DIR=book $(PY) -m pytest tests/browser/test_book.py -m browser -q -p no:cacheprovider

## style and likely bugs (ruff: pyflakes, pycodestyle, import order, bugbear); config in pyproject.toml
lint: $(STAMP)
	$(VENV)/bin/ruff check dtlab workbench tests notebooks scripts

## JupyterLab on notebooks/: loopback only, a token, --allow-root only as root, no browser where there is
## no display; prints the URL. LAB_PORT=8890 picks another first port.
lab: setup
	$(PY) scripts/lab.py

## peers that cannot share .venv (workbench/peer_env.py): liblinear-multicore installs the module name
## of liblinear-official, so its sdist is built (gcc, OpenMP) into .peers/liblinear-multicore; lleaves 1.3 needs
## llvmlite < 0.45 (numba needs a newer one), so it gets its own venv .peers/lleaves
peers: $(PEERS_STAMP)

$(PEERS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --no-deps --upgrade --target $(PEERS)/liblinear-multicore "liblinear-multicore==2.50.0"
	$(PYTHON) -m venv $(PEERS)/lleaves
	$(PEERS)/lleaves/bin/python -m pip install --quiet "lleaves==1.3.0" "llvmlite<0.45" numpy
	touch $@

## benchmarks against the peers (scikit-learn, XGBoost, LightGBM, LIBLINEAR) and the NumPy reference, per core and whole machine; ratios go to
## figures/results.json and the README's results section; the peers of .peers/ are set up first
bench: $(STAMP) $(PEERS_STAMP)
	MPLBACKEND=Agg $(PY) -m workbench bench --scale $(SCALE)

## regenerate only the README's results section from figures/results.json (no new measurements)
readme: $(STAMP)
	$(PY) -m workbench readme

## on a GPU machine: real-GPU tests, every kernel measured against its H200 model, then the GPU benchmarks, under
## 8 minutes (no venv: that machine's python3 and its cupy, CUDA 12 or 13); fails on a machine without a GPU
gpu-check:
	bash scripts/gpu_check.sh

$(GPU_COMPILE_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e ".[gpu-compile]"
	touch $(GPU_COMPILE_STAMP)

## without a GPU: every kernel the package launches compiled for sm_90 and sm_80 and assembled by ptxas -v;
## registers, spills, stack, shared memory and occupancy into figures/gpu/kernels.json (commit it); fails on a
## compile error, a spill, > 48 KiB of static shared memory, registers x block beyond the register file, an FMA in
## a kernel declared exact
gpu-compile: $(GPU_COMPILE_STAMP)
	NUMBA_ENABLE_CUDASIM=0 $(PY) -m dtlab.gpu.compile --out figures/gpu
