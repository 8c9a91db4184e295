"""The documentation's runnable snippets: ``.. code-block:: python`` or ``console`` blocks with
``:class: runnable`` in ``docs/*.rst`` and README.rst, read as written (no Sphinx needed).

A snippet names brokers as readers' clusters have them (``kafka-1:9092``); :func:`for_world` puts
the test world's bootstrap address in their place, the one substitution made.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "docs").glob("*.rst")) + [ROOT / "README.rst"]

#: the broker lists snippets name, longest first (replaced by the test world's bootstrap)
BROKER_LISTS = ("kafka-1:9092,kafka-2:9092", "kafka-1:9092", "kafka:9092", "broker:9092")

_DIRECTIVE = re.compile(r"^(?P<indent> *)\.\. code-block:: (?P<language>python|console)\s*$")
_OPTION = re.compile(r"^\s+:(?P<name>[\w-]+):\s*(?P<value>.*)$")


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int  # of the directive, 1-based
    language: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def for_world(self, bootstrap: str) -> str:
        code = self.code
        for brokers in BROKER_LISTS:
            code = code.replace(brokers, bootstrap)
        return code


def _block(lines: list[str], start: int, indent: int) -> tuple[dict[str, str], str]:
    """The options and the body of the directive on line ``start`` (0-based)."""
    options: dict[str, str] = {}
    i = start + 1
    while i < len(lines) and (match := _OPTION.match(lines[i])):
        options[match["name"]] = match["value"].strip()
        i += 1
    body: list[str] = []
    while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
        body.append(lines[i])
        i += 1
    return options, textwrap.dedent("\n".join(body)).strip("\n") + "\n"


def runnable_snippets(sources=SOURCES) -> list[Snippet]:
    found = []
    for path in sources:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            match = _DIRECTIVE.match(line)
            if not match:
                continue
            options, body = _block(lines, number, len(match["indent"]))
            if "runnable" in options.get("class", "").split():
                found.append(Snippet(path, number + 1, match["language"], body))
    return found


def console_commands(code: str) -> list[str]:
    """The ``kgroups`` command lines of a console snippet (a trailing ``# comment`` dropped)."""
    commands = []
    for line in code.splitlines():
        line = line.strip()
        if line.startswith("kgroups "):
            commands.append(re.sub(r"\s+#[^'\"]*$", "", line))
    return commands
