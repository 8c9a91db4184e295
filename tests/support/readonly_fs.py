"""A local filesystem under the fsspec protocol ``readonly://`` that refuses every write, as a
bucket does to read-only credentials: for readers that must not need to write where they read."""

from __future__ import annotations

import fsspec
from fsspec.implementations.local import LocalFileSystem

PROTOCOL = "readonly"


class ReadOnlyFileSystem(LocalFileSystem):
    protocol = (PROTOCOL,)

    @classmethod
    def _strip_protocol(cls, path):
        path = str(path)
        return super()._strip_protocol(
            path[len(PROTOCOL) + 3 :] if path.startswith(f"{PROTOCOL}://") else path
        )

    def _refuse(self, *args, **kwargs):
        raise PermissionError("read-only credentials: writing is not allowed")

    makedirs = mkdir = rm = rm_file = rmdir = mv = cp_file = touch = pipe_file = _refuse

    def _open(self, path, mode="rb", *args, **kwargs):
        if set(mode) & set("wax+"):
            self._refuse()
        return super()._open(path, mode, *args, **kwargs)


def register() -> None:
    fsspec.register_implementation(PROTOCOL, ReadOnlyFileSystem, clobber=True)
