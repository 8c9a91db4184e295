# Both entry points create their own virtual environment and install everything they
# need, so they work on a fresh machine with only python3 (>= 3.11), make and Java 17.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[airflow,spark,history,test,bench]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

## The main job: the example DAG end to end against an embedded broker started for it.
demo: $(STAMP)
	$(PY) scripts/demo.py

## Every test: client against the real broker and the fake cluster, lag engine, Airflow, Spark.
test: $(STAMP)
	$(PY) -m pytest

## Benchmarks (prints tables and keeps them in benchmarks/RESULTS-*.txt for the README; asserts nothing).
bench: $(STAMP)
	$(PY) benchmarks/bench_client.py | tee benchmarks/RESULTS-client.txt
	$(PY) benchmarks/bench_lag.py | tee benchmarks/RESULTS-lag.txt
	$(PY) benchmarks/bench_spark.py | tee benchmarks/RESULTS-spark.txt

clean:
	rm -rf $(VENV) .pytest_cache .demo
