"""The cleanup trail: every cleanup run's audit record (``<store>/_audit/``), what each run did
to each group, the backups it took (``<store>/_backups/``) and the command that undoes a
deletion. Read with :mod:`..history.audit` and :mod:`..history.backup`; nothing is written.

A run that died mid-change shows as the outcome the next run wrote for it ("interrupted: changed
/ not changed / cannot tell" per group, with the undo from the backup taken before its change);
one not yet reconciled shows among the open intents (:func:`open_runs`), with the groups it holds.

What reaches the browser is the audit record as the cleanup wrote it, with any user and
password in a URL blanked (``https://***@connect:8083``): a record never holds a secret, and
this keeps it so if a URL ever carried one.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterable
from typing import Any

from ..client.errors import ConfigurationError
from ..history.audit import list_audits, load_audit
from ..history.backup import list_backups, load_backup

__all__ = [
    "cleanup_runs",
    "group_cleanups",
    "deletions",
    "backup_document",
    "restore_commands",
    "backup_name",
    "redact",
    "open_runs",
    "undo_of",
]

#: How many of the newest runs the trail shows.
MAX_RUNS = 200
_RECORD_NAME = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}\.json$")
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")


def redact(value: Any) -> Any:
    """``value`` with ``user:password@`` in any URL inside it replaced by ``***@``."""
    if isinstance(value, str):
        return _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", value)
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


def backup_name(url: str | None) -> str | None:
    """The file name of a backup under ``_backups/`` (what the page links to), or None."""
    if not url:
        return None
    name = url.rstrip("/").rsplit("/", 1)[-1]
    return name if _RECORD_NAME.match(name) else None


def restore_commands(backup_url: str, group_ids: Iterable[str], conn_id: str | None) -> dict[str, str]:
    """How to undo a deletion: the CLI (add your own ``-b``/``--command-config``) and the hook."""
    groups = list(group_ids)
    cli = " ".join(shlex.quote(p) for p in ["kgroups", "restore", backup_url, *groups])
    hook = f"KafkaGroupsHook({(conn_id or 'kgroups_default')!r}).restore_offsets({backup_url!r}, {groups!r})"
    return {"cli": cli, "hook": hook}


#: decisions whose group the run changed (an interrupted run's: changed, or it cannot tell)
_CHANGED = {"deleted", "done", "partial"}


def undo_of(record: dict[str, Any]) -> dict[str, str]:
    """group -> the backup that undoes what the run did to it: the record's ``undo`` (written since
    runs keep intents; an interrupted run's names the backup from before its change), else the
    run's backup for the groups it changed (older records)."""
    if isinstance(record.get("undo"), dict):
        return {g: u for g, u in record["undo"].items() if isinstance(u, str)}
    backup_url = (record.get("summary") or {}).get("backup_url") or record.get("backup_url")
    if not backup_url:
        return {}
    return {
        g: backup_url for g, d in (record.get("decisions") or {}).items() if d.get("decision") in _CHANGED
    }


def _undo_list(record: dict[str, Any], conn_id: str | None) -> list[dict[str, Any]]:
    by_backup: dict[str, list[str]] = {}
    for g, url in sorted(undo_of(record).items()):
        by_backup.setdefault(url, []).append(g)
    return [
        {
            "backup": backup_name(url),
            "backup_url": url,
            "groups": groups,
            **restore_commands(url, groups, conn_id),
        }
        for url, groups in sorted(by_backup.items())
    ]


#: the summary's fields the trail shows, in this order
_SUMMARY_FIELDS = (
    "examined",
    "candidates",
    "cap",
    "deleted",
    "would_delete",
    "skipped",
    "refused",
    "failed",
    "not_found",
    "unjudged",
    "kept",
    "audit_error",
)
#: a decision's fields the trail shows, after its group id
_DECISION_FIELDS = (
    "decision",
    "reason",
    "health",
    "selected_by",
    "dead_reasons",
    "interrupted",
    "undo_backup",
)


def _run(url: str, record: dict[str, Any]) -> dict[str, Any]:
    summary = record.get("summary") or {}
    who = record.get("who") or {}
    decisions = record.get("decisions") or {}
    backup_url = summary.get("backup_url") or record.get("backup_url")
    undo = _undo_list(record, who.get("connection"))
    run = {
        "action": _action(record),
        "audit": url.rstrip("/").rsplit("/", 1)[-1],
        "started_ms": record.get("started_ms"),
        "finished_ms": record.get("finished_ms"),
        "dry_run": record.get("dry_run"),
        "who": who,
        "summary": {k: summary.get(k) for k in _SUMMARY_FIELDS},
        "backup": backup_name(backup_url),
        "backup_url": backup_url,
        "decisions": [
            {"group_id": g, **{k: d.get(k) for k in _DECISION_FIELDS}}
            for g, d in sorted(
                decisions.items(), key=lambda kv: (_ORDER.get(kv[1].get("decision"), 9), kv[0])
            )
        ],
        "restore": _restore(record, backup_url, decisions, undo, who.get("connection")),
        "undo": undo,
        "run_id": record.get("run_id"),
        "interrupted": record.get("interrupted"),
        "reconciled": record.get("reconciled") or [],
        "rules": record.get("rules"),
    }
    return redact(run)


def _restore(
    record: dict[str, Any],
    backup_url: str | None,
    decisions: dict[str, Any],
    undo: list[dict[str, Any]],
    conn_id: str | None,
) -> dict[str, str] | None:
    """The one command that undoes the run's deletions, when its one backup undoes them all."""
    deleted = sorted(g for g, d in decisions.items() if d.get("decision") == "deleted")
    if (
        backup_url
        and deleted
        and not record.get("interrupted")
        and [u["backup_url"] for u in undo] == [backup_url]
    ):
        return restore_commands(backup_url, deleted, conn_id)
    return None


_ORDER = {
    "interrupted": 0,
    "deleted": 0,
    "would_delete": 1,
    "failed": 2,
    "refused": 3,
    "skip": 4,
    "not_found": 5,
    "keep": 6,
}


@functools.lru_cache(maxsize=4096)
def _load(url: str) -> dict[str, Any] | None:
    """An audit record (written once, never rewritten: read once per process); None if unreadable."""
    try:
        return load_audit(url)
    except (ConfigurationError, ValueError, OSError):
        return None  # not a readable audit record: the trail lists the others


def _action(record: dict[str, Any]) -> str:
    """What the run did: the cleanup's records name no action; offset changes do (reset-offsets, ...)."""
    return str(record.get("action") or "delete-groups")


def _records(store_url: str, limit: int | None) -> list[tuple[str, dict[str, Any]]]:
    """The newest ``limit`` (None: all) readable audit records, newest first."""
    urls = list_audits(store_url)
    urls = urls[-limit:] if limit is not None else urls
    return [(url, record) for url, record in ((u, _load(u)) for u in reversed(urls)) if record is not None]


def cleanup_runs(store_url: str, limit: int = MAX_RUNS) -> list[dict[str, Any]]:
    """The newest ``limit`` cleanup runs, newest first."""
    return [_run(url, record) for url, record in _records(store_url, limit)]


def group_cleanups(store_url: str, group_id: str, limit: int = MAX_RUNS) -> list[dict[str, Any]]:
    """What each of the newest runs decided about ``group_id``, oldest first, with the audit
    record's decision in full and, for a deletion, the restore commands of its backup."""
    out = []
    for url, record in _records(store_url, limit):
        decision = (record.get("decisions") or {}).get(group_id)
        if decision is None:
            continue
        who = record.get("who") or {}
        backup_url = undo_of(record).get(group_id)
        out.append(
            redact(
                {
                    "action": _action(record),
                    "audit": url.rstrip("/").rsplit("/", 1)[-1],
                    "started_ms": record.get("started_ms"),
                    "dry_run": record.get("dry_run"),
                    "who": who,
                    "decision": decision,
                    "interrupted": record.get("interrupted"),
                    "backup": backup_name(backup_url),
                    "backup_url": backup_url,
                    "restore": restore_commands(backup_url, [group_id], who.get("connection"))
                    if backup_url
                    else None,
                }
            )
        )
    return sorted(out, key=lambda r: r.get("started_ms") or 0)


def deletions(store_url: str) -> dict[str, dict[str, Any]]:
    """Each group a cleanup run deleted (not a dry run): its newest deletion's time, audit record
    and backup, and the command that undoes it."""
    out: dict[str, dict[str, Any]] = {}
    for url, record in _records(store_url, None):
        if record.get("dry_run") is not False or _action(record) != "delete-groups":
            continue  # a dry run deleted nothing; an offset change never deletes a group
        who = record.get("who") or {}
        undo = undo_of(record)
        for group_id, decision in (record.get("decisions") or {}).items():
            backup_url = undo.get(group_id)
            gone = decision.get("decision") == "deleted" or (
                decision.get("decision") == "interrupted" and decision.get("interrupted") != "not_changed"
            )
            if gone and group_id not in out:
                out[group_id] = redact(
                    {
                        "at_ms": record.get("started_ms"),
                        "audit": url.rstrip("/").rsplit("/", 1)[-1],
                        "backup": backup_name(backup_url),
                        "restore": restore_commands(backup_url, [group_id], who.get("connection"))["cli"]
                        if backup_url
                        else None,
                    }
                )
    return out


def open_runs(store_url: str) -> list[dict[str, Any]]:
    """Runs with an intent but no outcome: running now, or died and not reconciled yet (the next
    run that changes groups in this store writes their outcome). Oldest first."""
    from ..history.journal import Journal

    try:
        journal = Journal(store_url)
        intents = journal.open_intents()
    except (OSError, ValueError):
        return []
    return [
        redact(
            {
                "intent": name,
                "run_id": i.get("run_id"),
                "action": i.get("action"),
                "started_ms": i.get("started_ms"),
                "who": i.get("who") or {},
                "owner": i.get("owner") or {},
                "expires_ms": i.get("expires_ms"),
                "backup_url": i.get("backup_url"),
                "groups": sorted(i.get("groups") or {}),
            }
        )
        for name, i in intents
    ]


def backup_document(store_url: str, name: str) -> dict[str, Any]:
    """One backup under ``<store>/_backups/`` by file name (nothing else can be asked for)."""
    if not _RECORD_NAME.match(name or ""):
        raise ConfigurationError(f"{name!r} is not a backup file name (YYYYMMDDTHHMMSSZ-<12 hex>.json).")
    matches = [u for u in list_backups(store_url) if u.rstrip("/").rsplit("/", 1)[-1] == name]
    if not matches:
        raise FileNotFoundError(name)
    backup = load_backup(matches[0])
    return redact({**backup.to_dict(), "name": name, "url": matches[0]})
