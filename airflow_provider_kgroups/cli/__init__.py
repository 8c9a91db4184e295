"""``kgroups``: the ops engineer's view of consumer groups (list, describe, lag, delete, restore).

Exit codes: 0 all fine, 1 some groups (or brokers) failed, 2 bad input, 3 no broker reachable.

One module per verb (``groups``, ``describe``, ``lag``, ``delete``, ``restore``), each a thin
layer over the client, the lag engine and the cleanup package with the same three parts:
``add_arguments(parser)``, an optional ``prepare(args)`` that checks its options before any
network call, and ``execute(client, args, progress)`` returning (document, table, ok). The
parser (``parser.py``) adds a verb's arguments only when that verb is used; the output (the
table, compact or pretty JSON) is ``output.py``; what verbs share is ``common.py``.
"""

# Only the standard library at import: the arguments are parsed (and ``--help`` answered)
# before the client, the lag engine or kafka-python's codec are loaded; even the client's errors
# (dataclasses, kafka.errors) load only once a verb runs, and a verb's module only once that verb
# is used (what each costs: docs/performance.rst).

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .output import TABLE_BLOCK, emit, json_encoder, render_table, write_out
from .parser import build_parser, verb_module

EXIT_OK, EXIT_PARTIAL, EXIT_BAD_INPUT, EXIT_UNREACHABLE = 0, 1, 2, 3

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_UNREACHABLE",
    "TABLE_BLOCK",
    "build_parser",
    "emit",
    "json_encoder",
    "main",
    "render_table",
    "run",
    "write_out",
]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from ..client.gcpause import fewer_collections, no_collection_at_exit

    if argv is None:  # the command itself (console script, python -m), not a caller in a longer process
        no_collection_at_exit()

    # A verb's results live until the output is written, hundreds of thousands of objects: with
    # CPython's default thresholds the collector rescans them again and again (docs/performance.rst
    # has the cost). The output is written inside, so it is built with the same few passes.
    with fewer_collections():
        return run(args)


def run(args: argparse.Namespace) -> int:
    import logging
    from importlib import import_module

    from ..client import (
        AuthenticationError,
        ConfigurationError,
        GroupsClient,
        KafkaGroupsError,
        NoBrokerAvailable,
    )
    from .common import Progress, client_config, merge_selection

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    if args.verbose:
        logging.getLogger("airflow_provider_kgroups.client.requests").setLevel(logging.DEBUG)
    progress = Progress(sys.stderr.isatty())
    verb = import_module(verb_module(args.command))
    try:
        merge_selection(args)
        config = client_config(args)
        prepare = getattr(verb, "prepare", None)
        if prepare is not None:  # the verb's own checks, before any network call (bad input: exit 2)
            prepare(args)
        with GroupsClient(config) as client, client.deadline(config.call_timeout_s):
            data, table, ok = verb.execute(client, args, progress)
    except ConfigurationError as exc:
        print(f"kgroups: bad input: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (NoBrokerAvailable, AuthenticationError) as exc:
        print(f"kgroups: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except KafkaGroupsError as exc:
        print(f"kgroups: {exc}", file=sys.stderr)
        return EXIT_PARTIAL
    emit(args, data, table)
    return EXIT_OK if ok else EXIT_PARTIAL
