"""Audit records of cleanup runs (history/audit.py): written under ``_audit/``, read back
identical, listed oldest first; anything else is refused by name."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kgroups.client.errors import ConfigurationError
from airflow_provider_kgroups.history.audit import AUDIT_DIR, list_audits, load_audit, write_audit


def test_write_read_list(tmp_path):
    base = str(tmp_path / "store")
    assert list_audits(base) == []
    first = write_audit(base, {"decisions": {"a": {"decision": "deleted"}}}, started_ms=1_700_000_000_000)
    second = write_audit(base, {"decisions": {}}, started_ms=1_700_000_100_000)
    assert first.startswith(f"{base}/{AUDIT_DIR}/20231114T221320Z-") and first.endswith(".json")
    assert load_audit(first) == {
        "format": "kgroups-cleanup-audit",
        "decisions": {"a": {"decision": "deleted"}},
    }
    assert list_audits(base) == [first, second]


def test_missing_and_foreign_files_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="no audit record at"):
        load_audit(str(tmp_path / "nope.json"))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ConfigurationError, match="is not a kgroups cleanup audit record"):
        load_audit(str(other))
