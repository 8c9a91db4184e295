"""Argument parsing shared by the operators, the sensor, the triggers and the lag gate's spec.
Pure: no Airflow import, nothing above the client.

Every parser takes the argument's name and value and returns the parsed value or raises
:class:`ConfigurationError` naming the argument and the fix. Values that still hold Jinja
(:func:`is_templated`) are checked only after rendering; :func:`check_arguments` does both.
An argument that several classes take has one named validator below (``parse_offset_count``,
``parse_interval``, ...), so the sensor, its gate spec and the triggers check it alike.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .client.errors import ConfigurationError
from .client.numbers import check_int, is_int, to_number
from .client.offset_map import OffsetKind, OffsetMap
from .client.selection import GroupSelector


def is_templated(value: Any) -> bool:
    """True when ``value`` (or an item of it) still holds Jinja: validate it after rendering."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, Mapping):
        return any(is_templated(k) or is_templated(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(is_templated(v) for v in value)
    return False


def parse_str_list(name: str, value: Any, *, allow_empty: bool = True) -> tuple[str, ...]:
    """A list of non-empty strings (or its rendered text, "['a', 'b']"); None -> ()."""
    if value is None:
        return ()
    if isinstance(value, str) and value.strip().startswith("["):  # a rendered template: "['a', 'b']"
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ConfigurationError(f"{name}={value!r} is not a list such as ['orders-landing'].") from None
        if not isinstance(value, list):
            raise ConfigurationError(f"{name}={value!r} is not a list such as ['orders-landing'].")
    if isinstance(value, str):
        raise ConfigurationError(
            f"{name} must be a list of strings, not the single string {value!r}: write {name}=[{value!r}]."
        )
    items = tuple(value)
    bad = [v for v in items if not isinstance(v, str) or not v.strip()]
    if bad:
        raise ConfigurationError(f"{name} contains {bad[0]!r}: every item must be a non-empty string.")
    if not items and not allow_empty:
        raise ConfigurationError(f"{name} is empty: give at least one.")
    return tuple(dict.fromkeys(items))


def parse_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    text = str(value).strip().lower() if value is not None else ""
    if text not in choices:
        raise ConfigurationError(f"{name}={value!r} is not one of {', '.join(map(repr, choices))}.")
    return text


def parse_number(
    name: str, value: Any, *, integer: bool = False, allow_zero: bool = True
) -> float | int | None:
    """None stays None; numbers and numeric strings (rendered templates) are checked >= 0."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = to_number(name, value)
    if math.isnan(number) or math.isinf(number) or number < 0 or (number == 0 and not allow_zero):
        raise ConfigurationError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}.")
    if integer:
        if number != int(number):
            raise ConfigurationError(f"{name} must be a whole number of offsets, got {value!r}.")
        return int(number)
    return number


def parse_timestamp_ms(name: str, value: Any) -> int | None:
    """A timezone-aware datetime, an ISO-8601 string with a zone (what ``{{ data_interval_end }}``
    renders to), or epoch milliseconds (int) -> epoch ms."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if is_int(value):
        return check_int(name, value, at_least=0, must_be=">= 0 epoch milliseconds")
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        try:
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigurationError(
                f"{name}={text!r} is not an ISO-8601 time such as '2024-05-01T00:00:00+00:00' "
                "(or '{{ data_interval_end }}')."
            ) from None
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ConfigurationError(
                f"{name}={value.isoformat()!r} has no time zone: add one (e.g. +00:00), "
                "so that the time is unambiguous."
            )
        return int(value.timestamp() * 1000)
    raise ConfigurationError(
        f"{name} must be a datetime, an ISO-8601 string or epoch milliseconds, got {type(value).__name__}."
    )


def parse_offsets_map(
    name: str, value: Any, kind: OffsetKind = OffsetKind.STARTING
) -> dict[str, dict[str, int]] | None:
    """Spark-style ``{"topic": {"0": 23}}`` from a dict or its JSON (or Python-literal) text,
    read as an offset map of ``kind`` (:class:`~.client.offset_map.OffsetKind`; by default
    ``STARTING``, where a range starts, -2 for earliest: the sensor's ``previous_barrier``);
    returns the nesting, in order.

    Also accepts a previous success XCom of the sensor (its ``endingOffsets`` are used), so
    ``previous_barrier="{{ ti.xcom_pull(task_ids='gate', include_prior_dates=True) }}"`` works.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        text = value.strip()
        if text in ("None", "null"):
            return None
        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise ConfigurationError(
                    f'{name} is not JSON such as \'{{"orders": {{"0": 23}}}}\'.'
                ) from None
    if isinstance(value, Mapping) and "endingOffsets" in value:  # a previous result of this sensor
        return parse_offsets_map(name, value["endingOffsets"], kind)
    return OffsetMap.parse(value, kind, name=name).nested()


# -- one validator per shared argument -------------------------------------------------------


def parse_names(name: str, value: Any) -> tuple[str, ...]:
    """Names (group ids, topics): a non-empty list of non-empty strings, duplicates dropped."""
    return parse_str_list(name, value, allow_empty=False)


def parse_offset_count(name: str, value: Any) -> int | None:
    """A number of offsets (records) >= 0, or None: ``max_lag_per_partition``, ``max_total_lag``."""
    return parse_number(name, value, integer=True)  # type: ignore[return-value]  # integer=True: an int


def parse_seconds(name: str, value: Any) -> float | None:
    """A duration in seconds >= 0, or None: ``max_lag_seconds``."""
    return parse_number(name, value)


def parse_interval(name: str, value: Any) -> float | None:
    """A duration in seconds > 0, or None: ``stuck_after``, ``poll_interval``."""
    return parse_number(name, value, allow_zero=False)


def parse_check_count(name: str, value: Any) -> int | None:
    """A number of consecutive checks > 0: ``verdict_checks``."""
    return parse_number(name, value, integer=True, allow_zero=False)  # type: ignore[return-value]  # integer=True: an int


def check_arguments(
    task_id: str, values: Mapping[str, Any], parsers: Mapping[str, Callable[..., Any]], *, rendered: bool
) -> dict[str, Any]:
    """Parse ``values[name]`` with ``parsers[name](name, value)``; before rendering, templated
    values are skipped (None in the result). Errors become ValueError("<task_id>: ...")."""
    out: dict[str, Any] = {}
    for name, parse in parsers.items():
        value = values[name]
        if not rendered and is_templated(value):
            out[name] = None
            continue
        try:
            out[name] = parse(name, value)
        except ConfigurationError as exc:
            raise ValueError(f"{task_id}: {exc}") from None
    return out


def check_argument(task_id: str, name: str, value: Any, parse: Callable[..., Any]) -> Any:
    """One argument that is never templated, parsed at once (DAG parse time)."""
    return check_arguments(task_id, {name: value}, {name: parse}, rendered=True)[name]


def parse_selector(task_id: str, ids: Any, patterns: Any, excludes: Any, *, allow_all: bool) -> GroupSelector:
    """Group ids and patterns -> a selector; neither given: every group (only with ``allow_all``)."""
    try:
        ids_, patterns_ = parse_str_list("group_ids", ids), parse_str_list("group_patterns", patterns)
        excludes_ = parse_str_list("exclude_patterns", excludes)
        if not ids_ and not patterns_:
            if allow_all:
                return GroupSelector(patterns=("*",), exclude=excludes_)
            raise ConfigurationError(
                "give group_ids and/or group_patterns (e.g. group_ids=['orders-landing'] or "
                "group_patterns=['orders-*'])."
            )
        return GroupSelector(ids=ids_, patterns=patterns_, exclude=excludes_)
    except ConfigurationError as exc:
        raise ValueError(f"{task_id}: {exc}") from None


def parse_bool(name: str, value: Any) -> bool:
    """True/False, or their rendered text ("True", "false"); anything else is an error (no guessing
    on flags such as ``dry_run``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigurationError(f"{name} must be True or False, got {value!r}.")


def parse_conn_id(name: str, value: Any) -> str:
    """A connection id: a non-empty string (None or "" would look up a connection that cannot exist)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{name} must be a connection id such as 'kgroups_default', got {value!r}.")
    return value.strip()


def parse_deferrable(name: str, value: Any) -> bool:
    """True or False only: ``deferrable='yes'`` (truthy) would defer while the author may mean anything."""
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False, got {value!r}.")
    return value


def parse_topics(name: str, value: Any) -> tuple[str, ...] | None:
    """None (every partition the group committed or is assigned) or a non-empty list of topics;
    ``[]`` is refused: it would select nothing and every check would pass vacuously."""
    if value is None:
        return None
    topics = parse_str_list(name, value)
    if not topics:
        raise ConfigurationError(
            f"{name}=[] selects no partition: name at least one topic, or leave {name} "
            "unset (None) for every partition the groups use."
        )
    return topics


def parse_storage_options(name: str, value: Any) -> dict[str, Any]:
    """fsspec options: a mapping with string keys (None: none)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{name} must be a dict of fsspec options such as {{'anon': False}}, "
            f"got {type(value).__name__} {value!r}."
        )
    bad = [k for k in value if not isinstance(k, str) or not k]
    if bad:
        raise ConfigurationError(f"{name} has key {bad[0]!r}: fsspec option names are non-empty strings.")
    return dict(value)


def parse_url(name: str, value: Any) -> str:
    """A local directory or an fsspec URL whose protocol fsspec knows (``s3://``, ``gs://``,
    ``abfs://``, ``file://``, ``memory://``, chained ``simplecache::s3://``). The protocol's
    package (s3fs, gcsfs, ...) is needed only where the task runs, so it is not imported here."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(
            f"{name} must be a directory or an fsspec URL such as 's3://bucket/kgroups-history', "
            f"got {value!r}."
        )
    import fsspec

    known = set(fsspec.available_protocols())
    for part in value.strip().split("::"):
        protocol, _ = fsspec.core.split_protocol(part)
        if protocol is not None and protocol not in known:
            raise ConfigurationError(
                f"{name}={value!r} has the URL scheme {protocol!r}, which fsspec does not know: "
                "use a directory or a scheme such as s3://, gs://, abfs://, file://."
            )
    return value
