# haygraph — two commands do all set-up: `make demo` and `make test`.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.haygraph-installed

# No network at run time: models are bundled, telemetry off, hub lookups offline.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HAYSTACK_TELEMETRY_ENABLED := False
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test test-fast lint bench clean

install: $(STAMP)

# torch first, pinned: the CPU wheel on this disk; a bare requirement would pull a CUDA build.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q --upgrade pip
	$(PY) -m pip install --disable-pip-version-check -q torch==2.13.0
	$(PY) -m pip install --disable-pip-version-check -q -e '.[dev,mcp]'
	@touch $(STAMP)

demo: install
	$(VENV)/bin/haygraph demo

test: install
	$(VENV)/bin/pytest -q

test-fast: install
	$(VENV)/bin/pytest -q -m "not integration and not comparison"

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy retrieval control adapters eval

bench: install
	$(PY) -m eval.bench_retrieval

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
