"""The docs' tests: real Airflow (its environment set before any test module imports Airflow, as in
tests/airflow/) for the snippets that build hooks and operators."""

from __future__ import annotations

from tests.support.airflow_env import kgroups_conn
