"""Where a history store's rollups are saved, and the sweep that keeps that place to what the
store still holds.

The place (:func:`choose_place`), first that can be written:

1. a configured directory or fsspec URL (the page's ``[kgroups] ui_rollup_cache``), in a folder
   per store (``store-<hash of the store URL>``); configured, it is the only place tried;
2. beside the history, ``<store>/_rollups`` (the ``_`` keeps it out of the Parquet dataset:
   pyarrow and Spark skip it);
3. a local directory, ``<temp dir>/kgroups-rollups/store-<hash>``, when the history may not be
   written (read-only bucket credentials): each api-server host then rolls the store up once.

None writable: the rollups are kept in memory only. Whether a place can be written is tried
with a small file, written and removed. Inside the place, one folder per format version
(:data:`VERSION`); :func:`sweep` removes other versions and what belongs to dates the store no
longer has (history retention deleted their files).
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import IO

import fsspec

from .store import HistoryStore

__all__ = ["RollupPlace", "PlaceKind", "VERSION", "choose_place", "sweep", "write_atomically"]

log = logging.getLogger(__name__)

VERSION = "v1"


@contextmanager
def write_atomically(fs, path: str) -> Iterator[IO[bytes]]:
    """A file to write ``path``'s bytes to: written under a temporary name in the same folder and
    moved to ``path`` when the block ends without an error, so readers never see half a file."""
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    temporary = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    with fs.open(temporary, "wb") as f:
        yield f
    fs.mv(temporary, path)


_VERSION_DIR = re.compile(r"^v[0-9]+$")
_DATED = re.compile(r"^date=(\d{4}-\d{2}-\d{2})(\.arrow|\.parquet)?$")


class PlaceKind(Enum):
    CONFIGURED = "configured"
    BESIDE_HISTORY = "beside the history"
    LOCAL = "local (the history store is not writable)"
    MEMORY = "memory only (no writable place)"


@dataclass(frozen=True, slots=True)
class RollupPlace:
    """``root`` on ``fs`` holds one folder per format version; ``dir`` is this version's."""

    kind: PlaceKind
    fs: fsspec.AbstractFileSystem | None
    root: str
    url: str

    @property
    def dir(self) -> str:
        return f"{self.root}/{VERSION}"

    @property
    def writable(self) -> bool:
        return self.fs is not None

    def describe(self) -> str:
        return f"{self.kind.value}: {self.url}" if self.writable else self.kind.value


def _store_folder(store: HistoryStore) -> str:
    return "store-" + hashlib.sha256(store.url.encode()).hexdigest()[:16]


def _writable(fs, root: str) -> str | None:
    """None if a file can be written (and removed) under ``root``; else why not."""
    probe = f"{root}/{VERSION}/.probe-{uuid.uuid4().hex[:8]}"
    try:
        fs.makedirs(f"{root}/{VERSION}", exist_ok=True)
        fs.pipe(probe, b"")
        fs.rm(probe)
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means: not here
        return f"{type(exc).__name__}: {exc}"


def choose_place(
    store: HistoryStore, cache_url: str | None = None, *, local_base: str | None = None, save: bool = True
) -> RollupPlace:
    """The first writable place of the module docstring's list; logs which, and why not the others."""
    if not save:
        return RollupPlace(PlaceKind.MEMORY, None, "", "")
    folder = _store_folder(store)
    if cache_url:  # a configured place that cannot be written is a mistake to see, not to route around
        fs, root = fsspec.core.url_to_fs(cache_url.rstrip("/"))
        candidates = [
            (PlaceKind.CONFIGURED, fs, f"{root.rstrip('/')}/{folder}", f"{cache_url.rstrip('/')}/{folder}")
        ]
    else:
        base = local_base or f"{tempfile.gettempdir()}/kgroups-rollups"
        candidates = [
            (PlaceKind.BESIDE_HISTORY, store.filesystem, f"{store.root}/_rollups", f"{store.url}/_rollups"),
            (PlaceKind.LOCAL, fsspec.filesystem("file"), f"{base}/{folder}", f"{base}/{folder}"),
        ]
    refused: list[str] = []
    for kind, fs, root, url in candidates:
        why = _writable(fs, root)
        if why is None:
            place = RollupPlace(kind, fs, root, url)
            log.info(
                "kgroups history: rollups of %s are saved %s%s",
                store.url,
                place.describe(),
                f" ({'; '.join(refused)})" if refused else "",
            )
            return place
        refused.append(f"not {kind.value} {url}: {why}")
    log.warning(
        "kgroups history: rollups of %s are kept in memory only and computed again by the next process (%s)",
        store.url,
        "; ".join(refused),
    )
    return RollupPlace(PlaceKind.MEMORY, None, "", "")


def sweep(place: RollupPlace, dates: set[str]) -> list[str]:
    """Remove from the place other format versions and the rollups and date rows of dates not in
    ``dates`` (the store's); returns what was removed. Failures are logged, never raised."""
    fs = place.fs
    if fs is None:  # not writable
        return []
    removed = []
    try:
        for path in fs.ls(place.root, detail=False):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if _VERSION_DIR.match(name) and name != VERSION:
                removed.append(path)
        for path in fs.ls(place.dir, detail=False):
            dated = _DATED.match(path.rstrip("/").rsplit("/", 1)[-1])
            if dated and dated.group(1) not in dates:
                removed.append(path)
        for path in removed:
            fs.rm(path, recursive=True)
    except Exception as exc:  # noqa: BLE001 - leftovers are only unused cache files
        log.info("kgroups history: could not clean the rollups under %s (%s)", place.url, exc)
        return []
    if removed:
        log.info(
            "kgroups history: removed %d rollup(s) of other versions or of dates no longer in the store",
            len(removed),
        )
    return removed
