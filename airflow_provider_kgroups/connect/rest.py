"""Read one Kafka Connect cluster's connectors over its REST API.

Shapes follow Apache Kafka's ``ConnectorsResource`` (connect/runtime/.../rest/resources):

* ``GET /connectors?expand=status&expand=info`` (``listConnectors``, Kafka 2.3+, KIP-465):
  ``{name: {"status": ConnectorStateInfo, "info": ConnectorInfo}}``; a connector removed while
  the worker builds the answer is left out (its NotFoundException is caught), and ``info`` is
  ``null`` when its configuration is already gone (``AbstractHerder.connectorInfo``).
* Without ``expand`` support (older Connect ignores the parameter) the same URL answers
  ``["name", ...]``; then ``GET /connectors/{name}`` (``getConnector``: ConnectorInfo) and
  ``GET /connectors/{name}/status`` (``getConnectorStatus``) per connector. A 404 there means
  the connector was deleted in between: it is left out, as the expand form does.
* ``ConnectorStateInfo`` (rest/entities): ``{"name", "connector": {"state", "worker_id",
  "trace"?}, "tasks": [{"id", "state", "worker_id", "trace"?}], "type"}``; ``ConnectorInfo``:
  ``{"name", "config": {...}, "tasks": [{"connector", "task"}], "type"}``; ``type`` is
  ``ConnectorType`` lower-cased: "source", "sink" or "unknown" (missing on very old workers).
* Errors: ``{"error_code": int, "message": str}`` (rest/entities/ErrorMessage).

A sink connector's consumer group (``Worker.baseConsumerConfigs``) is
``SinkUtils.consumerGroupId(name)`` = ``"connect-" + name``, unless the connector config sets
``consumer.override.group.id`` (``DistributedHerder.validateSinkConnectorGroupId``).

Anything else (unreachable, 401/403, another non-2xx, a 5xx left after the retries, a body
that is not this JSON) is a :class:`ConnectReadError` for the cluster as a whole: half an
answer is never taken as the whole one.
"""

from __future__ import annotations

import json
import logging
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError

from ..client.numbers import is_int
from .config import ConnectClusterConfig
from .http import open_session, request_timeout

log = logging.getLogger(__name__)

GROUP_OVERRIDE = "consumer.override.group.id"
GROUP_PREFIX = "connect-"


#: a 404 for one connector: deleted since the listing (distinct from a JSON null)
MISSING = object()


class ConnectReadError(Exception):
    """One Connect cluster could not be read; the message says why (never a credential)."""


@dataclass(frozen=True, slots=True)
class TaskState:
    id: int
    state: str


@dataclass(frozen=True, slots=True)
class ConnectorRecord:
    """One connector as its Connect cluster reported it."""

    cluster_url: str
    name: str
    type: str  # "sink", "source" or "unknown"
    state: str  # connector state: RUNNING, PAUSED, STOPPED, FAILED, UNASSIGNED, RESTARTING
    tasks: tuple[TaskState, ...] = ()
    config_known: bool = True  # False: info was null (config already gone)
    group_override: str | None = None  # consumer.override.group.id, if set

    @property
    def group_id(self) -> str | None:
        """The consumer group a sink connector uses (None for a source connector)."""
        if self.type == "source":
            return None
        return self.group_override or GROUP_PREFIX + self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster_url": self.cluster_url,
            "name": self.name,
            "type": self.type,
            "state": self.state,
            "tasks": [{"id": t.id, "state": t.state} for t in self.tasks],
            "group_id": self.group_id,
            "group_override": self.group_override,
            "config_known": self.config_known,
        }


def read_connectors(config: ConnectClusterConfig, deadline: float) -> list[ConnectorRecord]:
    """Every connector of one Connect cluster, or :class:`ConnectReadError`."""
    session = open_session(config, deadline)
    try:
        listing = _get_json(session, config, deadline, "/connectors?expand=status&expand=info")
        if isinstance(listing, dict):
            records = [_from_expanded(config.url, name, entry) for name, entry in listing.items()]
        elif isinstance(listing, list) and all(isinstance(name, str) for name in listing):
            log.info(
                "Kafka Connect %s does not expand /connectors: reading %d connector(s) one by one",
                config.url,
                len(listing),
            )
            records = [
                r for r in (_read_one(session, config, deadline, name) for name in listing) if r is not None
            ]
        else:
            raise ConnectReadError(
                f"GET {config.url}/connectors answered {_kind(listing)}, not the documented "
                "list of names or map of connectors"
            )
    finally:
        session.close()
    return records


def _read_one(session, config, deadline, name: str) -> ConnectorRecord | None:
    path = f"/connectors/{quote(name, safe='')}"
    info = _get_json(session, config, deadline, path, missing_ok=True)
    status = (
        _get_json(session, config, deadline, path + "/status", missing_ok=True)
        if info is not MISSING
        else None
    )
    if info is MISSING or status is MISSING:
        log.info(
            "Kafka Connect %s: connector %r vanished between the listing and its details", config.url, name
        )
        return None
    if not isinstance(info, dict):  # getConnector answers a ConnectorInfo or 404, never null
        raise ConnectReadError(f"{config.url}: connector {name!r}: info is not a ConnectorInfo object")
    return _record(config.url, name, status, info)


def _from_expanded(url: str, name: str, entry: Any) -> ConnectorRecord:
    if not isinstance(entry, dict) or "status" not in entry or "info" not in entry:
        raise ConnectReadError(
            f"{url}/connectors?expand=status&expand=info: entry {name!r} lacks status/info "
            "(a worker that ignores one expansion is not understood)"
        )
    return _record(url, name, entry["status"], entry["info"])


def _record(url: str, name: str, status: Any, info: Any) -> ConnectorRecord:
    where = f"{url}: connector {name!r}"
    if not isinstance(status, dict) or not isinstance(status.get("connector"), dict):
        raise ConnectReadError(f"{where}: status is not a ConnectorStateInfo object")
    state = status["connector"].get("state")
    if not isinstance(state, str) or not state:
        raise ConnectReadError(f"{where}: status has no connector state")
    tasks_raw = status.get("tasks", [])
    if not isinstance(tasks_raw, list):
        raise ConnectReadError(f"{where}: status tasks is not a list")
    tasks = []
    for task in tasks_raw:
        if not isinstance(task, dict) or not is_int(task.get("id")) or not isinstance(task.get("state"), str):
            raise ConnectReadError(f"{where}: a task status lacks id/state")
        tasks.append(TaskState(task["id"], task["state"].upper()))
    if info is not None and (not isinstance(info, dict) or not isinstance(info.get("config", {}), dict)):
        raise ConnectReadError(f"{where}: info is not a ConnectorInfo object")
    config = (info or {}).get("config") or {}
    kind = (info or {}).get("type") or status.get("type") or "unknown"
    if not isinstance(kind, str):
        raise ConnectReadError(f"{where}: type is not a string")
    override = config.get(GROUP_OVERRIDE)
    return ConnectorRecord(
        url,
        name,
        kind.lower(),
        state.upper(),
        tuple(sorted(tasks, key=lambda t: t.id)),
        config_known=info is not None and "config" in info,
        group_override=override.strip() if isinstance(override, str) and override.strip() else None,
    )


def _get_json(
    session: requests.Session,
    config: ConnectClusterConfig,
    deadline: float,
    path: str,
    missing_ok: bool = False,
) -> Any:
    url = config.url + path
    try:
        timeout = request_timeout(config, deadline)
    except TimeoutError:
        raise ConnectReadError(f"GET {url}: the deadline passed before it could be asked") from None
    started = time.monotonic()
    try:
        response = session.get(url, timeout=timeout, verify=config.verify, allow_redirects=True)
    except requests.exceptions.SSLError as exc:
        raise ConnectReadError(
            f"GET {url}: TLS failed ({_short(exc)}); check the CA bundle / verify option"
        ) from None
    except requests.exceptions.Timeout:
        raise ConnectReadError(f"GET {url}: no answer within {timeout:.3g} s") from None
    except requests.exceptions.ConnectionError as exc:
        # a timeout after the retries (or with no time left for one) comes wrapped in MaxRetryError
        inner = _innermost(exc)
        # NewConnectionError (refused, no route) subclasses ConnectTimeoutError in urllib3 2.x
        if isinstance(inner, (ReadTimeoutError, ConnectTimeoutError)) and not isinstance(
            inner, NewConnectionError
        ):
            raise ConnectReadError(f"GET {url}: no answer within {timeout:.3g} s") from None
        if isinstance(inner, ssl.SSLError):
            raise ConnectReadError(
                f"GET {url}: TLS failed ({_short(exc)}); check the CA bundle / verify option"
            ) from None
        raise ConnectReadError(f"GET {url}: unreachable ({_short(exc)})") from None
    except requests.exceptions.RetryError as exc:
        raise ConnectReadError(f"GET {url}: gave up retrying ({_short(exc)})") from None
    except requests.exceptions.RequestException as exc:
        raise ConnectReadError(f"GET {url}: {type(exc).__name__} ({_short(exc)})") from None
    log.debug("GET %s -> %d in %.3f s", url, response.status_code, time.monotonic() - started)
    if response.status_code == 404 and missing_ok:
        return MISSING
    if response.status_code in (401, 403):
        who = f"as user {config.username!r}" if config.uses_auth else "without credentials"
        raise ConnectReadError(
            f"GET {url}: HTTP {response.status_code} {response.reason} {who}; check the Connect "
            "basic-auth user/password and its permissions"
        )
    if not 200 <= response.status_code < 300:
        after = " after retries" if response.status_code in (429,) or response.status_code >= 500 else ""
        raise ConnectReadError(
            f"GET {url}: HTTP {response.status_code} {response.reason}{after}{_error_message(response)}"
        )
    try:
        return response.json()
    except (ValueError, json.JSONDecodeError):
        raise ConnectReadError(f"GET {url}: the answer is not JSON ({_snippet(response.text)!r})") from None


def _error_message(response: requests.Response) -> str:
    """Connect's ErrorMessage entity, if the body is one."""
    try:
        body = response.json()
    except ValueError:
        return ""
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return f": {_snippet(body['message'])}"
    return ""


def _snippet(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _innermost(exc: BaseException) -> BaseException:
    """requests and urllib3 nest the cause (ConnectionError(MaxRetryError(reason=...)))."""
    reason = exc
    for _ in range(6):
        inner = getattr(reason, "reason", None)
        if not isinstance(inner, BaseException):
            inner = reason.args[0] if reason.args and isinstance(reason.args[0], BaseException) else None
        if inner is None or inner is reason:
            break
        reason = inner
    return reason


def _short(exc: BaseException) -> str:
    reason = _innermost(exc)
    return _snippet(f"{type(reason).__name__}: {reason}", 240)


def _kind(value: Any) -> str:
    return f"a JSON {type(value).__name__}"
