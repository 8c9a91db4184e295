"""The ``[kgroups]`` section of Airflow's configuration: deployment defaults for this provider.

Declared in the provider info (``get_provider_info()["config"]``, the shape official providers
use), so ``airflow config list`` shows it with each option's description, type and default,
and ``AIRFLOW__KGROUPS__<OPTION>`` sets an option like any other Airflow setting::

    [kgroups]
    history_url = s3://bucket/kgroups-history
    connect_conn_ids = connect_prod
    max_deletions = 10

Operator arguments win over the section; the section wins over the built-in defaults. The
declaration below is plain data (``get_provider_info`` must stay import-free); the readers
import Airflow's configuration when called, and always pass the declared default as the
fallback, so a process that has not loaded the providers' configuration reads the same value.
"""

from __future__ import annotations

from typing import Any

SECTION = "kgroups"

#: The system-group patterns the cleanup never deletes unless told (the lag engine's
#: ``DEFAULT_DENY_PATTERNS``; tests/airflow/test_settings.py checks they are the same).
_DEFAULT_DENY = "connect-*,_confluent*,__*,schema-registry*"


def _option(description: str, type_: str, default: str | None, example: str | None = None) -> dict[str, Any]:
    return {
        "description": description,
        "version_added": "0.1.0",
        "type": type_,
        "example": example,
        "default": default,
    }


#: option -> its declaration (Airflow's provider config schema: description, version_added, type,
#: example, default; defaults are strings, as in airflow.cfg).
OPTIONS: dict[str, dict[str, Any]] = {
    "history_url": _option(
        "Where the lag history lives (a directory or an fsspec URL): the snapshot operator appends to it, "
        "the cleanup reads its evidence there and writes audit records (and, without backup_url, offset "
        "backups) under it. Empty: operators must be given history_url.",
        "string",
        "",
        "s3://bucket/kgroups-history",
    ),
    "default_deny_patterns": _option(
        "Comma-separated globs (or re: regexes) of groups the cleanup never deletes unless an allow "
        "pattern or override_deny names them: system groups. Replace only knowingly.",
        "string",
        _DEFAULT_DENY,
        "connect-*,_confluent*,__*,schema-registry*,mirrormaker-*",
    ),
    "max_deletions": _option(
        "Cleanup cap: at most this many groups deleted per run (0: none).", "integer", "10", "20"
    ),
    "max_deletions_percent": _option(
        "Cleanup cap: at most this percentage of the candidates deleted per run, rounded up (0-100).",
        "float",
        "50.0",
        "25",
    ),
    "connect_conn_ids": _option(
        "Comma-separated kgroups_connect connection ids (Kafka Connect REST APIs) whose connectors are "
        "evidence for the cleanup: a connector that exists keeps its group. Empty: Connect is not asked "
        "and connect-* groups stay behind the deny patterns.",
        "string",
        "",
        "connect_prod,connect_dr",
    ),
    "allowed_token_callbacks": _option(
        "Comma-separated import paths (module.function or module.*) that an OAUTHBEARER connection may "
        "name as its token callback. Empty: no callback may be named.",
        "string",
        "",
        "mycompany.kafka_auth.token,mycompany.auth.*",
    ),
    "metrics_tag_limit": _option(
        "Per gate check, at most this many (group, topic) series are sent with group/topic tags (the "
        "most lagging first; the rest add up under group=_other, topic=_other), so a gate over many "
        "groups cannot flood the metrics backend. Only used where Airflow's metrics carry tags.",
        "integer",
        "20",
        "50",
    ),
    "ui_kafka_conn_id": _option(
        'The kgroups connection the Consumer groups page\'s "refresh now" reads one live snapshot through '
        "(its secrets stay in the api-server).",
        "string",
        "kgroups_default",
        "kgroups_prod",
    ),
    "ui_idle_hours": _option(
        "The idle_hours the Consumer groups page judges dead-group candidates by, from the history alone "
        "(the cleanup operator's idle_hours; the cleanup reads Kafka again before it deletes).",
        "float",
        "168",
        "72",
    ),
    "ui_rollup_cache": _option(
        "Where the Consumer groups page saves the history's rollups (a directory or an fsspec URL; one folder "
        "per store under it). Empty: beside the history under _rollups/, or, when the api-server may not write "
        "there (read-only credentials), a local directory under the system temp directory.",
        "string",
        "",
        "/var/cache/airflow/kgroups-rollups",
    ),
}


def provider_config() -> dict[str, Any]:
    """The provider info's ``config`` entry."""
    return {
        SECTION: {
            "description": "Deployment defaults of the Kafka consumer groups provider (airflow-provider-kgroups): "
            "operator arguments override them.",
            "options": OPTIONS,
        }
    }


# -- readers (import Airflow's configuration when called) -------------------------------------


def _conf():
    from airflow.providers.common.compat.sdk import conf

    return conf


def get_str(option: str) -> str:
    return _conf().get(SECTION, option, fallback=OPTIONS[option]["default"]).strip()


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def get_list(option: str) -> list[str]:
    """A comma-separated option as a list (empty items dropped)."""
    return _items(get_str(option))


def _number(option: str, cast: type, what: str):
    value = get_str(option)
    try:
        return cast(value)
    except ValueError:
        raise ValueError(
            f"[{SECTION}] {option} must be {what}, got {value!r} (set it in airflow.cfg or "
            f"AIRFLOW__{SECTION.upper()}__{option.upper()})."
        ) from None


def get_int(option: str) -> int:
    return _number(option, int, "an integer")


def get_float(option: str) -> float:
    return _number(option, float, "a number")


def history_url() -> str | None:
    return get_str("history_url") or None


# -- the example DAGs' own section (not declared: the examples are not the provider's configuration)

EXAMPLES_SECTION = "kgroups_examples"


def example_setting(name: str, default: str) -> str:
    """An option of ``[kgroups_examples]`` (``AIRFLOW__KGROUPS_EXAMPLES__<NAME>``), read by dags/."""
    return _conf().get(EXAMPLES_SECTION, name, fallback=default)


def example_list(name: str, default: str) -> list[str]:
    """A comma-separated ``[kgroups_examples]`` option as a list (empty items dropped)."""
    return _items(example_setting(name, default))


__all__ = [
    "SECTION",
    "OPTIONS",
    "provider_config",
    "get_str",
    "get_list",
    "get_int",
    "get_float",
    "history_url",
    "EXAMPLES_SECTION",
    "example_setting",
    "example_list",
]
