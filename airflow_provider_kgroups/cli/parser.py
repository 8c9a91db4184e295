"""The command line's parser: the options every verb shares, and one sub-parser per verb whose
own arguments are added only when that verb is used (each verb module's ``add_arguments``),
so ``kgroups --help`` imports no verb module and builds no verb's arguments.

Only the standard library at import."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

ENV_BOOTSTRAP = "KGROUPS_BOOTSTRAP_SERVERS"
ENV_COMMAND_CONFIG = "KGROUPS_COMMAND_CONFIG"
DESCRIPTION = (
    "``kgroups``: the ops engineer's view of consumer groups (list, describe, lag, delete, restore, "
    "reset and delete offsets)."
)

#: verb -> (one-line help, description or None), in the order ``--help`` lists them. A verb's
#: arguments, options check and work live in its own module (the verb with "-" as "_").
VERBS: dict[str, tuple[str, str | None]] = {
    "groups": ("list groups with their states", None),
    "describe": ("state, members and assignments", None),
    "lag": ("committed vs log-end offset per partition, totals per group and topic", None),
    "delete": (
        "delete groups safely (dry run unless --yes)",
        "Named groups are deleted when Empty (the evidence is reported); a pattern selects only groups "
        "the evidence calls dead. Deny patterns protect system groups. Offsets are backed up (and read "
        "back) before any delete; the restore command is printed.",
    ),
    "restore": ("commit the offsets of a backup taken by delete or reset-offsets", None),
    "reset-offsets": (
        "reset committed offsets as kafka-consumer-groups.sh does, safely (dry run unless --execute)",
        "Kafka's --reset-offsets option by option (KIP-122): a scope (--topic, --all-topics), exactly "
        "one strategy, several groups or a pattern. Only groups without members are reset; a Kafka "
        "Connect sink group never directly. Offsets are clamped to [log start, log end] (reported); the "
        "current offsets are backed up and read back first; the undo command is printed.",
    ),
    "delete-offsets": (
        "delete committed offsets of a topic (OffsetDelete), safely (dry run unless --execute)",
        "Kafka's --delete-offsets (KIP-496): a live group keeps the topics its members subscribe to "
        "(GROUP_SUBSCRIBED_TO_TOPIC, reported per partition). The offsets are backed up and read back "
        "first; the undo command is printed.",
    ),
    "share-lag": (
        "share groups' lag per share-partition (KIP-932, Kafka 4.1+): exact or at most",
        "The broker's exact lag where it gives one (DescribeShareGroupOffsets v1, KIP-1226, Kafka 4.2+); "
        "on Kafka 4.1 the log end minus the start offset, an upper bound, reported as 'at most'. A "
        "share-partition never initialized is unknown (exit 1), never 0.",
    ),
}


def verb_module(verb: str) -> str:
    """The module (inside this package) that holds a verb's arguments and work."""
    return f"{__package__}.{verb.replace('-', '_')}"


def add_common_options(parser: argparse.ArgumentParser, *, in_verb: bool) -> None:
    """Connection and output options. They are accepted before the verb and after it
    (``kgroups -b h:9092 lag ...`` and ``kgroups lag -b h:9092 ...``, as kafka-consumer-groups.sh
    users type them): after the verb their default is SUPPRESS, so a value given before the
    verb is kept unless the same option is given again after it (then the later one wins)."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if in_verb else value

    conn = parser.add_argument_group("connection")
    conn.add_argument(
        "--bootstrap-servers",
        "-b",
        default=default(os.environ.get(ENV_BOOTSTRAP)),
        help=f"host:port[,host:port] (env {ENV_BOOTSTRAP})",
    )
    conn.add_argument(
        "--command-config",
        default=default(os.environ.get(ENV_COMMAND_CONFIG)),
        help=f"Java-style client.properties: security.protocol, sasl.*, ssl.* (env {ENV_COMMAND_CONFIG})",
    )
    conn.add_argument(
        "--timeout",
        type=float,
        default=default(None),
        help="seconds for the whole command, every request included (default 60)",
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--format",
        choices=("table", "json", "jsonl"),
        default=default("table"),
        help="table (default); json: one compact document (lag writes it as it reads, batch by batch); jsonl: lag streams one JSON object per "
        "group as its results complete (other verbs: the document on one line)",
    )
    out.add_argument(
        "--pretty", action="store_true", default=default(False), help="json: indented, keys sorted"
    )
    out.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        default=default(False),
        help="log every request (API, version, broker, time)",
    )


def _terminal_columns() -> int:
    """shutil.get_terminal_size's answer without importing shutil (and bz2, lzma with it)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(
            prog, indent_increment, max_help_position, width if width is not None else _terminal_columns() - 2
        )


class _VerbParser(argparse.ArgumentParser):
    """A verb's parser whose arguments are added when it is first used (parsed, or its help or
    usage shown): ``kgroups lag ...`` builds the lag verb's arguments only and ``kgroups --help``
    none (argparse spends about a millisecond per verb's arguments)."""

    def __init__(
        self, *args: Any, fill: Callable[[argparse.ArgumentParser], None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._fill = fill

    def _filled(self) -> None:
        fill, self._fill = self._fill, None
        if fill is not None:
            add_common_options(self, in_verb=True)  # every verb also takes the common options
            fill(self)

    def parse_known_args(self, args=None, namespace=None):
        self._filled()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._filled()
        return super().format_usage()

    def format_help(self) -> str:
        self._filled()
        return super().format_help()


class _VerbArguments:
    """A verb's ``fill``: imports the verb's module (only now) and adds its arguments."""

    def __init__(self, verb: str) -> None:
        self.verb = verb

    def __call__(self, parser: argparse.ArgumentParser) -> None:
        from importlib import import_module

        import_module(verb_module(self.verb)).add_arguments(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgroups", description=DESCRIPTION, formatter_class=_Formatter)
    add_common_options(parser, in_verb=False)
    verbs = parser.add_subparsers(dest="command", required=True, parser_class=_VerbParser)
    for verb, (help_text, description) in VERBS.items():
        verbs.add_parser(
            verb,
            help=help_text,
            description=description,
            formatter_class=_Formatter,
            fill=_VerbArguments(verb),
        )
    return parser
