"""The write-ahead part of the audit trail: intents and leases, next to the audit records::

    <store>/_intents/open/<YYYYMMDDTHHMMSSZ>-<run>.json  a run's intent, written before its first change
    <store>/_audit/<same name>                           its outcome (the run's audit record)
    <store>/_intents/<same name>                         the intent, moved here once it has its outcome
    <store>/_leases/<group>-<hash>.json                  which run may change the group now
    <store>/_undo/<group>-<hash>.json                    a group an interrupted run changed: the backup
                                                         from before it, and the offsets it left

An intent without an outcome of the same name is a run that has not finished, or died: the next
run reconciles it (``cleanup.writeahead``). Only open intents stay under ``open/``, so a run
looks at a handful of files, not at every run the store ever had. A lease names its owner (host, process, run)
and an expiry; it is taken with an exclusive create, so of two runs exactly one gets it.

This module only stores and reads; what a run does with them is ``cleanup.writeahead``'s.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fsspec

from ..client.errors import KafkaGroupsError
from .audit import AUDIT_DIR
from .records import encode, list_records, put_new

__all__ = ["INTENT_FORMAT", "LEASE_FORMAT", "Owner", "Journal"]

INTENTS_DIR = "_intents"
OPEN_DIR = "_intents/open"
LEASES_DIR = "_leases"
UNDO_DIR = "_undo"
INTENT_FORMAT = "kgroups-change-intent"
LEASE_FORMAT = "kgroups-group-lease"

#: runs of this process that are still running (a lease of this process naming another run is stale)
ACTIVE_RUNS: set[str] = set()


@dataclass(frozen=True, slots=True)
class Owner:
    """Who holds a lease or wrote an intent: this host and process, this run."""

    host: str
    pid: int
    run_id: str

    @classmethod
    def me(cls, run_id: str) -> Owner:
        return cls(socket.gethostname(), os.getpid(), run_id)

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "run_id": self.run_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Owner:
        return cls(str(data.get("host") or ""), int(data.get("pid") or 0), str(data.get("run_id") or ""))

    def gone(self, expires_ms: int, now_ms: int) -> str | None:
        """Why this owner's run cannot be running any more (None: it may be)."""
        if expires_ms <= now_ms:
            return "its lease expired"
        if self.host != socket.gethostname():
            return None  # another host: only the expiry tells
        if self.pid == os.getpid():
            return None if self.run_id in ACTIVE_RUNS else "its run ended in this process without finishing"
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return f"its process {self.pid} on this host is gone"
        except PermissionError:
            return None  # alive, another user's
        return None


def lease_name(group_id: str) -> str:
    """A file name for any group id (Kafka allows any string): readable part + hash."""
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", group_id)[:80]
    return f"{readable}-{hashlib.sha256(group_id.encode()).hexdigest()[:12]}.json"


class Journal:
    """Intents and leases under one store URL."""

    def __init__(self, store_url: str, storage_options: Mapping[str, Any] | None = None) -> None:
        self.store_url = store_url.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self.fs, self.root = fsspec.core.url_to_fs(self.store_url, **self.storage_options)
        self.root = self.root.rstrip("/")

    def _path(self, folder: str, name: str) -> str:
        return f"{self.root}/{folder}/{name}"

    def url(self, folder: str, name: str) -> str:
        return f"{self.store_url}/{folder}/{name}"

    def _read(self, path: str) -> dict[str, Any] | None:
        try:
            with self.fs.open(path, "rb") as f:
                data = json.loads(f.read())
        except FileNotFoundError:
            return None
        return data if isinstance(data, dict) else None

    # -- intents -------------------------------------------------------------------------

    def write_intent(self, name: str, document: Mapping[str, Any]) -> str:
        """Write the intent ``name`` and read it back; returns its URL."""
        full = {"format": INTENT_FORMAT, **document}
        path = self._path(OPEN_DIR, name)
        if not put_new(self.fs, path, encode(full)):
            raise KafkaGroupsError(f"an intent record already exists at {self.url(OPEN_DIR, name)}.")
        if self._read(path) != json.loads(encode(full)):
            raise KafkaGroupsError(
                f"the intent record written to {self.url(OPEN_DIR, name)} does not read "
                "back the same: nothing is changed."
            )
        return self.url(OPEN_DIR, name)

    def closed_url(self, name: str) -> str:
        """Where the intent ``name`` is kept once it has its outcome."""
        return self.url(INTENTS_DIR, name)

    def has_outcome(self, name: str) -> bool:
        return bool(self.fs.exists(self._path(AUDIT_DIR, name)))

    def is_open(self, name: str) -> bool:
        return bool(self.fs.exists(self._path(OPEN_DIR, name))) and not self.has_outcome(name)

    def close_intent(self, name: str) -> None:
        """Move the intent (which has its outcome) out of ``open/``."""
        try:
            self.fs.mv(self._path(OPEN_DIR, name), self._path(INTENTS_DIR, name))
        except FileNotFoundError:
            pass  # moved already

    def open_intents(self) -> list[tuple[str, dict[str, Any]]]:
        """(name, intent) of every intent without an outcome, oldest first (unreadable ones too, as {});
        an intent found with its outcome (its run died between the two) is moved out on the way."""
        out = []
        for url in list_records(self.store_url, OPEN_DIR, storage_options=self.storage_options):
            name = url.rsplit("/", 1)[-1]
            if self.has_outcome(name):
                self.close_intent(name)
                continue
            try:
                data = self._read(self._path(OPEN_DIR, name))
            except (ValueError, OSError):
                data = None
            out.append((name, data if data and data.get("format") == INTENT_FORMAT else {}))
        return out

    # -- leases --------------------------------------------------------------------------

    def take_lease(
        self, group_id: str, owner: Owner, intent_name: str, expires_ms: int
    ) -> dict[str, Any] | None:
        """Take the group's lease: None when taken, else the lease another run holds."""
        document = {
            "format": LEASE_FORMAT,
            "group_id": group_id,
            "owner": owner.to_dict(),
            "intent": intent_name,
            "expires_ms": expires_ms,
        }
        path = self._path(LEASES_DIR, lease_name(group_id))
        if put_new(self.fs, path, encode(document)):
            return None
        held = self._read(path)
        return held if held is not None else {"owner": {}, "expires_ms": 0, "unreadable": True}

    def lease(self, group_id: str) -> dict[str, Any] | None:
        try:
            return self._read(self._path(LEASES_DIR, lease_name(group_id)))
        except (ValueError, OSError):
            return {"owner": {}, "expires_ms": 0, "unreadable": True}

    def leases(self) -> list[dict[str, Any]]:
        directory = f"{self.root}/{LEASES_DIR}"
        if not self.fs.exists(directory):
            return []
        out = []
        for path in sorted(self.fs.ls(directory, detail=False)):
            if path.endswith(".json"):
                try:
                    data = self._read(path)
                except (ValueError, OSError):
                    data = None
                if data:
                    out.append(data)
        return out

    def release_lease(self, group_id: str, run_id: str) -> bool:
        """Remove the group's lease if ``run_id`` holds it (a stale one is removed by the run that
        broke it, naming the stale run). On a local disk the file is first moved aside (of two
        removers one gets it) and put back if it turned out to be someone else's."""
        path = self._path(LEASES_DIR, lease_name(group_id))
        if "file" in self.fs.protocol or "local" in self.fs.protocol:
            aside = f"{path}.{uuid.uuid4().hex[:8]}.released"
            try:
                os.rename(path, aside)
            except FileNotFoundError:
                return False
            try:
                with open(aside, "rb") as f:
                    data = json.loads(f.read())
            except ValueError:
                data = {}
            if (data.get("owner") or {}).get("run_id") != run_id:
                try:
                    os.link(aside, path)  # someone else's: back where it was, unless taken since
                except FileExistsError:
                    pass
                os.unlink(aside)
                return False
            os.unlink(aside)
            return True
        held = self._read(path)
        if held is None or (held.get("owner") or {}).get("run_id") != run_id:
            return False
        self.fs.rm(path)
        return True

    # -- pending undo --------------------------------------------------------------------

    def set_pending_undo(self, group_id: str, document: Mapping[str, Any]) -> None:
        """Record (replacing any earlier: the intent it comes from carries the chain) that an
        interrupted run left ``group_id`` changed. Written under a temporary name, then moved."""
        path = self._path(UNDO_DIR, lease_name(group_id))
        temporary = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
        self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        with self.fs.open(temporary, "wb") as f:
            f.write(encode({"group_id": group_id, **document}))
        self.fs.mv(temporary, path)

    def pending_undo(self, group_id: str) -> dict[str, Any] | None:
        try:
            return self._read(self._path(UNDO_DIR, lease_name(group_id)))
        except (ValueError, OSError):
            return None

    def clear_pending_undo(self, group_id: str) -> None:
        try:
            self.fs.rm(self._path(UNDO_DIR, lease_name(group_id)))
        except FileNotFoundError:
            pass
