"""What every verb prints: the table (left-aligned columns, rendered in blocks, or written part by
part), compact or pretty JSON as bytes (or one compact document written part by part), and
:func:`emit`, which builds only the form that was asked for.

Only the standard library at import (``--help`` loads this module); msgspec or json load when a
document is written."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: rows rendered at a time: only one block's cell strings live at once, whatever the table's
#: length (docs/performance.rst, "100,000 groups and the table")
TABLE_BLOCK = 20_000
#: a streamed part of up to this many rows has its columns made once instead of twice (for the
#: widths, then for the lines, in blocks): the memory of one part's columns buys the second pass
ONE_PASS_ROWS = 100_000


def _columns(block: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
    """The block's columns (as many as its shortest row has), None as "-"."""
    columns: list[Sequence[Any]] = list(zip(*block))
    for i, column in enumerate(columns):
        if None in column:
            columns[i] = ["-" if v is None else v for v in column]
    return columns


def _column_widths(columns: Sequence[Sequence[Any]], widths: Sequence[int]) -> list[int]:
    return [max(width, _widest(column)) for width, column in zip(widths, columns)]


def _widest(column: Sequence[Any]) -> int:
    """The longest cell's length. An int's text is widest at the column's largest or smallest
    value (the minus sign), so of the ints only those two are written: the offsets of 400,000
    partitions are turned into text once (in the lines), not twice. Distinct strings are
    measured once; other values (bool, float: equal to an int yet written otherwise) each."""
    kinds = set(map(type, column))
    if kinds == {str}:
        return max(map(len, column))
    if int not in kinds:
        return max(map(len, map(str, column)), default=0)
    ints = [v for v in column if v.__class__ is int]
    widest = max(len(str(max(ints))), len(str(min(ints))))
    if len(kinds) == 1:
        return widest
    rest = [v for v in column if v.__class__ is not int]
    return max(widest, max(map(len, set(rest) if kinds == {int, str} else map(str, rest))))


def _format(columns: Sequence[Sequence[Any]], widths: Sequence[int]) -> str:
    """The lines of ``columns``, each cell left-aligned to its width, two spaces apart: one
    ``%`` per line, the loop in C."""
    line = "  ".join(f"%-{width}s" for width in widths)
    return "\n".join(map(line.__mod__, zip(*columns)))


def render_table(headers: Sequence[str], rows: list[Sequence[Any]]) -> str:
    """Left-aligned columns two spaces apart, None as "-". Column by column, with the loops in C
    (map, zip, %): 39,000 lines for 3,000 groups in a fraction of the time cell by cell takes.
    In blocks of :data:`TABLE_BLOCK` rows, twice: the column widths, then the lines."""
    headers = list(headers)[: min(map(len, rows))] if rows else list(headers)
    widths = _widths(rows, [len(h) for h in headers])
    return "\n".join([_header(headers, widths), *_lines(rows, widths)])


def _header(headers: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(map(str.ljust, headers, widths))


def _blocks(rows: list[Sequence[Any]]) -> list[list[Sequence[Any]]]:
    return [rows[i : i + TABLE_BLOCK] for i in range(0, len(rows), TABLE_BLOCK)]


def _widths(rows: list[Sequence[Any]], widths: list[int]) -> list[int]:
    for block in _blocks(rows):
        widths = _column_widths(_columns(block), widths)
    return widths


def _lines(rows: list[Sequence[Any]], widths: Sequence[int]) -> list[str]:
    return [_format(_columns(block), widths) for block in _blocks(rows)]


class TableStream:
    """A table written part by part as the parts are read (``kgroups lag`` of many groups): a
    part is aligned as :func:`render_table` aligns it, and a column is never narrower than in
    the parts before; it widens when a later part needs it (the lines above stay as they were).
    With one part the output is :func:`render_table`'s."""

    def __init__(self, headers: Sequence[str], write: Callable[[bytes], None]) -> None:
        self._headers = list(headers)
        self._widths: list[int] | None = None
        self._write = write

    def add(self, rows: list[Sequence[Any]]) -> None:
        if not rows:
            return
        first = self._widths is None
        if first:
            self._headers = self._headers[: min(map(len, rows))]
        widths = self._widths or [len(h) for h in self._headers]
        if len(rows) <= ONE_PASS_ROWS:  # the columns made once, for the widths and the lines
            columns = _columns(rows)
            widths = _column_widths(columns, widths)
            lines = [_format(columns, widths)]
        else:
            widths = _widths(rows, widths)
            lines = _lines(rows, widths)
        self._widths = widths
        if first:
            lines.insert(0, _header(self._headers, widths))
        self._write(("\n".join(lines) + "\n").encode())

    def close(self) -> None:
        """The header alone when no part had a row."""
        if self._widths is None:
            self._write((_header(self._headers, [len(h) for h in self._headers]) + "\n").encode())


#: the deferred object's entries stay in memory up to this many bytes, then go to a temporary file
DEFERRED_IN_MEMORY = 1 << 20


class JsonDocumentStream:
    """One compact JSON document written as it is made (``kgroups --format json lag`` of many
    groups): ``{<head fields>,"<streamed>":{<entries>},"<deferred>":{<entries>}}``, the bytes
    :func:`json_encoder` writes for the same dict built whole (msgspec keeps a dict's order and
    writes no spaces, so a document is its fields' encodings joined).

    :meth:`start` writes the head fields and opens the streamed object; :meth:`add` encodes an
    entry of it at once and :meth:`flush` writes the entries added since, as one chunk (a part's);
    :meth:`defer` keeps an entry of the object that comes after it (the groups that could not be
    read, named after every group that was), as bytes, in memory up to
    :data:`DEFERRED_IN_MEMORY`, then in a temporary file: memory does not grow with the entries.
    :meth:`close` writes the rest; with an error, the open objects are closed and a last field
    ``"error": {"type", "message"}`` says why the document stops there: the output is valid JSON
    wherever the run stopped."""

    def __init__(self, write: Callable[[bytes], None], streamed: str, deferred: str) -> None:
        import msgspec.json

        self._encode = msgspec.json.Encoder().encode
        self._write = write
        self._streamed, self._deferred = streamed, deferred
        self._started = self._closed = False
        self._written = 0  # entries of the streamed object written so far
        self._pending: list[bytes] = []
        self._spool: Any = None  # tempfile.SpooledTemporaryFile, made at the first deferred entry

    @property
    def started(self) -> bool:
        return self._started

    def start(self, head: Mapping[str, Any]) -> None:
        encode = self._encode
        fields = b"".join(encode(key) + b":" + encode(value) + b"," for key, value in head.items())
        self._write(b"{" + fields + encode(self._streamed) + b":{")
        self._started = True

    def add(self, key: str, value: Any) -> None:
        self._pending.append(self._encode(key) + b":" + self._encode(value))

    def add_all(self, entries: Mapping[str, Any]) -> None:
        """:meth:`add` of each entry, in order, with one call of the encoder (a mapping's
        encoding without its braces is its entries' encodings joined by commas)."""
        if entries:
            self._pending.append(self._encode(entries)[1:-1])

    def flush(self) -> None:
        if self._pending:
            self._write((b"," if self._written else b"") + b",".join(self._pending))
            self._written += len(self._pending)
            self._pending = []

    def defer(self, key: str, value: Any) -> None:
        if self._spool is None:
            import tempfile

            # outlives this call: closed by close(), after its bytes are written
            self._spool = tempfile.SpooledTemporaryFile(max_size=DEFERRED_IN_MEMORY)  # noqa: SIM115
        elif self._spool.tell():
            self._spool.write(b",")
        self._spool.write(self._encode(key) + b":" + self._encode(value))

    def close(self, error: BaseException | None = None) -> None:
        """The entries added and not yet flushed, the deferred object, the error if any, and the
        document's end (with a newline, as :func:`emit` writes one). Only once."""
        if self._closed:
            return
        self._closed = True
        spool, self._spool = self._spool, None
        try:
            self.flush()
            self._write(b"}," + self._encode(self._deferred) + b":{")
            if spool is not None:
                spool.seek(0)
                while chunk := spool.read(DEFERRED_IN_MEMORY):
                    self._write(chunk)
            end = b"}"
            if error is not None:
                end += b',"error":' + self._encode({"type": type(error).__name__, "message": str(error)})
            self._write(end + b"}\n")
        finally:
            if spool is not None:
                spool.close()


def json_encoder(args) -> Callable[[Any], bytes]:
    """Compact by default (what scripts read): msgspec, as UTF-8 bytes; ``--pretty``: the
    standard library, indented, keys sorted (what people read).

    msgspec encodes the lag document several times faster than the standard library, which
    outweighs its import but for a few hundred groups or fewer (docs/performance.rst, measured in
    benchmarks/RESULTS-json.txt); it is installed with Airflow anyway (apache-airflow-core
    requires it). Two differences in the bytes,
    none in the values: non-ASCII text is written as UTF-8 instead of ``\\uXXXX`` escapes
    (RFC 8259 requires UTF-8 between systems; the bytes go to stdout's buffer, so the locale
    cannot break them), and floats outside 1e-4..1e16 are written as ``1e16``, not ``1e+16``."""
    if getattr(args, "pretty", False):
        import json

        return lambda data: json.dumps(data, indent=2, sort_keys=True).encode()
    import msgspec.json

    return msgspec.json.Encoder().encode


def write_out(data: bytes) -> None:
    """Bytes to stdout, after whatever text was printed before them."""
    out = sys.stdout
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is None:  # a text-only stand-in for stdout (io.StringIO)
        out.write(data.decode())
        out.flush()
        return
    buffer.write(data)
    buffer.flush()


def emit(args, data: Any, table: Any) -> None:
    """Only what was asked for is built: the table for ``table``, the document for json."""
    if args.format == "table":
        if table is not None:  # None: the verb wrote its table as it went (TableStream)
            print(table() if callable(table) else table)
    elif data is not None:
        write_out(json_encoder(args)(data() if callable(data) else data) + b"\n")
