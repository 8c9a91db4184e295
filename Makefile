# Both entry points create their own virtual environment and install everything they
# need, so they work on a fresh machine with only python3 (>= 3.11), make, Java 17 and Maven.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: demo test test-airflow lint bench docs install check-install clean

# A changed pyproject.toml rebuilds the venv from scratch: pip never uninstalls what an older
# dependency set brought in, and a leftover can shadow a package's files.
$(STAMP): pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[spark,history,msk,ui]" --group test --group bench --group docs
	@# The editable build leaves airflow_provider_kgroups.egg-info in the checkout: with the checkout on
	@# sys.path (pytest, the demo's Airflow services) importlib.metadata would see the distribution twice
	@# and Airflow would load the airflow.plugins entry point twice ("Plugin 'kgroups' already registered").
	rm -rf airflow_provider_kgroups.egg-info
	touch $(STAMP)

install: $(STAMP)

## The main job: the example DAG end to end against an embedded broker started for it.
demo: $(STAMP)
	$(PY) -m demo

## Static checks (configured in pyproject.toml): ruff's lint rules, ruff's formatting, mypy (strict on client/
## and lag/). `$(PY) -m ruff check --fix . && $(PY) -m ruff format .` fixes most of what the first two report.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

## Every test: the static checks, then client against the real broker and the fake cluster, lag engine, Airflow, Spark
## (on the newest Airflow), then the Airflow layer's tests on each older Airflow the provider supports.
test: lint
	$(PY) scripts/check_install.py
	$(PY) -m pytest
	$(PY) scripts/airflow_versions.py --jobs 2

## The Airflow layer's tests on each older Airflow the provider supports (2.11, 3.0, 3.1, 3.2), each in a venv
## of its own under .airflow-venvs/ with the provider installed by pip as a user would (scripts/airflow_versions.py);
## the last step of `make test`, here alone.
test-airflow: $(STAMP)
	$(PY) scripts/airflow_versions.py --jobs 2

## The documentation site in docs/_build/html, warnings as errors (the tests build it too: tests/docs/).
docs: $(STAMP)
	$(PY) -m sphinx -E -W --keep-going -n -b html docs docs/_build/html

## Each install line README.rst documents, in a fresh venv of its own: pip check clean, no file
## owned by two distributions, the modules import. (CI runs it after the tests.)
INSTALL_LINES := . .[history] .[spark,history] .[msk] .[ui] .[spark,history,ui]
check-install:
	@for line in $(INSTALL_LINES); do \
	  echo "== pip install '$$line'"; rm -rf .check-venv; \
	  $(PYTHON) -m venv .check-venv && .check-venv/bin/python -m pip install --quiet --upgrade pip && \
	  .check-venv/bin/python -m pip install --quiet "$$line" && .check-venv/bin/python scripts/check_install.py \
	  || { rm -rf .check-venv; exit 1; }; \
	done; rm -rf .check-venv

## Benchmarks (prints tables and keeps them in benchmarks/RESULTS-*.txt, which the docs include; asserts nothing).
bench: $(STAMP)
	$(PY) benchmarks/bench_client.py | tee benchmarks/RESULTS-client.txt
	$(PY) benchmarks/bench_lag.py | tee benchmarks/RESULTS-lag.txt
	$(PY) benchmarks/bench_spark.py | tee benchmarks/RESULTS-spark.txt
	$(PY) benchmarks/bench_datasource.py | grep -v -E 'WARN|log4j|setLogLevel' | tee benchmarks/RESULTS-datasource.txt
	$(PY) benchmarks/bench_cli.py --scenarios lag,old,help,cold | tee benchmarks/RESULTS-cli.txt
	$(PY) benchmarks/bench_imports.py | tee benchmarks/RESULTS-imports.txt
	$(PY) benchmarks/bench_json.py | tee benchmarks/RESULTS-json.txt
	{ $(PY) benchmarks/bench_ui.py; $(PY) benchmarks/bench_ui.py --files-per-day 96; } | tee benchmarks/RESULTS-ui.txt

clean:
	rm -rf $(VENV) .check-venv .airflow-venvs .pytest_cache .demo docs/_build
