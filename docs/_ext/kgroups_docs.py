"""Sphinx extension of this documentation: pages generated from the code, so they cannot drift.

- ``.. kgroups-config::``: the provider's configuration sections (``get_provider_info()["config"]``:
  every option with its description, type, default, example and environment variable);
- ``.. kgroups-connection:: <type>``: a connection type's form (``get_provider_info()``'s
  ``conn-fields`` and ``ui-field-behaviour``);
- ``.. kgroups-api-versions::``: every Kafka API the client speaks, the highest version it
  implements and the versions its handlers declare a feature needs;
- :func:`cli_parser`: the ``kgroups`` parser with every verb's arguments added, for
  sphinx-argparse (the command adds a verb's arguments only when that verb is used);
- the custom OpenLineage facets' JSON schemas, published at ``_static/openlineage/`` where their
  ``$id`` (``observability/facets.py``'s ``SCHEMA_BASE``) says they are.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: where the custom facets' schemas go in the built site (their $id names this path)
SCHEMA_DIR = Path("_static") / "openlineage"


#: the option groups of ``add_common_options``, documented once for the command
_COMMON_GROUPS = ("connection", "output")


def cli_parser():
    """The ``kgroups`` argument parser with every verb's arguments filled in."""
    from airflow_provider_kgroups.cli.parser import build_parser

    parser = build_parser()
    parsers = [parser]
    for action in parser._subparsers._group_actions:
        for verb in action.choices.values():
            verb.format_usage()  # a verb's parser adds its arguments when first used
            # the connection and output options every verb also takes are shown once, on the command
            verb._action_groups = [g for g in verb._action_groups if g.title not in _COMMON_GROUPS]
            parsers.append(verb)
    for each in parsers:  # sphinx-argparse reads help texts as reStructuredText: ``orders-*`` is no emphasis
        if each is not parser:  # the command's own description is written in reStructuredText already
            each.description = _plain(each.description)
        for action in each._actions:
            action.help = _plain(action.help)
    return parser


def _plain(text: str | None) -> str | None:
    """Help text as reStructuredText that shows it as written."""
    if text is None or text == "==SUPPRESS==":
        return text
    return "".join("\\" + char if char in "*`|_\\" else char for char in text)


def _literal(value: Any) -> str:
    if value is None or value == "":
        return "(empty)"
    return f"``{value}``"


def _indent(text: str, prefix: str = "   ") -> list[str]:
    return [prefix + line if line else "" for line in text.splitlines()]


class _RstDirective(SphinxDirective):
    """A directive that writes reStructuredText and parses it in place."""

    def rst(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        lines = StringList(self.rst(), source=self.get_source_info()[0])
        nested_parse_with_titles(self.state, lines, container, self.content_offset)
        return container.children


class ConfigDirective(_RstDirective):
    """Every option of the provider's configuration sections, from get_provider_info()."""

    def rst(self) -> list[str]:
        from airflow_provider_kgroups.get_provider_info import get_provider_info

        out: list[str] = []
        for section, spec in get_provider_info()["config"].items():
            out += [
                f".. _config-{section}:",
                "",
                f"``[{section}]``",
                "^" * (len(section) + 6),
                "",
                spec["description"],
                "",
            ]
            for option, decl in spec["options"].items():
                env = f"AIRFLOW__{section.upper()}__{option.upper()}"
                out += [f".. _config-{section}-{option}:", "", f"``{option}``"]
                out += _indent(
                    f":Type: {decl['type']}\n:Default: {_literal(decl.get('default'))}\n"
                    f":Example: {_literal(decl.get('example'))}\n:Environment: ``{env}``\n"
                    f":Added in: {decl.get('version_added') or '-'}\n\n{decl['description']}"
                )
                out.append("")
        return out


class ConnectionDirective(_RstDirective):
    """A connection type's form fields (get_provider_info()'s conn-fields and ui-field-behaviour)."""

    required_arguments = 1

    def rst(self) -> list[str]:
        from airflow_provider_kgroups.get_provider_info import get_provider_info

        conn_type = self.arguments[0]
        matches = [c for c in get_provider_info()["connection-types"] if c["connection-type"] == conn_type]
        if not matches:
            raise self.error(f"no connection type {conn_type!r} in get_provider_info()")
        conn = matches[0]
        behaviour = conn.get("ui-field-behaviour", {})
        relabel, hidden = behaviour.get("relabeling", {}), set(behaviour.get("hidden-fields", ()))
        placeholders = behaviour.get("placeholders", {})
        out = [f'Hook: :class:`{conn["hook-class-name"]}` ("{conn["hook-name"]}").', ""]
        for field in ("host", "schema", "login", "password", "port", "extra"):
            if field in hidden:
                continue
            hint = placeholders.get(field)
            out += [f"``{field}`` (form field *{relabel.get(field, field.capitalize())}*)"]
            out += _indent(f"e.g. ``{hint}``" if hint else "as Airflow's form has it") + [""]
        for name, spec in conn.get("conn-fields", {}).items():
            schema = spec.get("schema", {})
            declared = schema.get("type")
            types = [t for t in declared if t != "null"] if isinstance(declared, list) else [declared]
            kind = " or ".join(t for t in types if t) or "string"
            if schema.get("format") == "password":
                kind += ", a secret (masked)"
            description = spec.get("description", "")
            if schema.get("enum"):
                description += " One of " + ", ".join(f"``{v}``" for v in schema["enum"]) + "."
            out += [f"``{name}`` (extra field *{spec.get('label', name)}*)"]
            out += _indent(f"{kind}; default {_literal(schema.get('default'))}. {description}") + [""]
        return out


class ApiVersionsDirective(_RstDirective):
    """Every Kafka API the client speaks: its key, the highest version this client implements
    (each API's ``KafkaApi`` declaration, beside its handler) and the versions its handlers
    declare a feature needs (``Handler.needs``)."""

    def rst(self) -> list[str]:
        import importlib
        import pkgutil

        from airflow_provider_kgroups.client import handlers
        from airflow_provider_kgroups.client.handlers.base import Handler
        from airflow_provider_kgroups.client.protocol import declared_apis

        needs: dict[type, dict[tuple[int, str], list[str]]] = {}
        for module in pkgutil.iter_modules(handlers.__path__):
            loaded = importlib.import_module(f"{handlers.__name__}.{module.name}")
            for obj in vars(loaded).values():
                if (
                    isinstance(obj, type)
                    and issubclass(obj, Handler)
                    and obj.__module__ == loaded.__name__
                    and "request_class" in vars(obj)
                ):
                    for need in obj.needs:
                        needs.setdefault(obj.request_class, {}).setdefault(
                            (need.version, need.what), []
                        ).append(f"``{obj.__name__}``")
        out = [  # every handler is imported now, and with them the lookups: every API is declared
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 30 8 12 50",
            "",
            "   * - API",
            "     - key",
            "     - up to",
            "     - a feature needs",
        ]
        for api in declared_apis():
            request, top = api.request, api.max_version
            declared = [
                f"v{version}: {what} ({', '.join(sorted(names))})"
                for (version, what), names in sorted(needs.get(request, {}).items())
            ]
            out += [
                f"   * - {request.__name__.removesuffix('Request')}",
                f"     - {request.API_KEY}",
                f"     - v{top}",
                "     - " + ("; ".join(declared) if declared else ""),
            ]
        return out + [""]


PACKAGE = "airflow_provider_kgroups"


def _existing(name: str) -> bool:
    """Whether ``name`` (dotted, absolute) is a module or an attribute of one in this package."""
    import importlib

    if not (name == PACKAGE or name.startswith(PACKAGE + ".")):
        return False
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _docstring_of(source: str) -> str:
    """The dotted path in autodoc's source of a docstring (``...:docstring of a.b.C.method``)."""
    marker = "docstring of "
    return source[source.index(marker) + len(marker) :].strip() if marker in source else ""


def _resolve_code_reference(app: Sphinx, env, node, contnode):
    """References the package's docstrings write the way its code imports (``:func:`..lag.gate.check_gate```,
    ``:class:`ConfigurationError``` in a module that imports it): linked when the object is documented,
    plain text when it exists in the code but has no page; a name that exists nowhere stays a warning."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".")
    module = node.get("py:module") or ""
    objects = env.get_domain("py").objects
    documented = [name for name in objects if name == target or name.endswith("." + target)]
    if len(documented) > 1:  # an object documented under its public path is also known by its canonical one
        documented = [name for name in documented if not objects[name].aliased]
    if len(documented) == 1:
        from sphinx.util.nodes import make_refnode

        entry = objects[documented[0]]
        return make_refnode(
            app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, documented[0]
        )
    # the scopes the reference was written in: the documented object's dotted path (a docstring's
    # source says "docstring of <path>", the canonical one), then the module it is documented under
    scopes = [name for name in (_docstring_of(node.source or ""), module) if name]
    bases = [
        ".".join(scope.split(".")[:cut]) for scope in scopes for cut in range(scope.count(".") + 1, 0, -1)
    ]
    candidates = [target] + [f"{base}.{target}" for base in bases]
    if any(_existing(name) for name in candidates):
        return contnode
    return None


def _publish_schemas(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    import airflow_provider_kgroups.observability as observability

    target = Path(app.outdir) / SCHEMA_DIR
    target.mkdir(parents=True, exist_ok=True)
    for schema in sorted((Path(observability.__file__).parent / "schemas").glob("*.json")):
        shutil.copyfile(schema, target / schema.name)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kgroups-config", ConfigDirective)
    app.add_directive("kgroups-connection", ConnectionDirective)
    app.add_directive("kgroups-api-versions", ApiVersionsDirective)
    app.connect("build-finished", _publish_schemas)
    app.connect("missing-reference", _resolve_code_reference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
