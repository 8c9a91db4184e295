"""The connection forms on Airflow 2, built from the fields the provider info declares.

Airflow 3.2 draws a connection form from a provider's declared ``conn-fields`` and
``ui-field-behaviour`` (get_provider_info.py). Airflow 2's Flask UI asks the hook instead
(``get_connection_form_widgets`` / ``get_ui_field_behaviour``): these functions turn the same
declarations into its wtforms fields, so each field is written once. Airflow 3.0 and 3.1 ask the hook
too, but their UI has no Flask-AppBuilder to draw the widgets with: there the provider's settings go
into *Extra* as JSON (the installation docs' support table). The fields keep their bare names, which
is how Airflow stores them in the connection's extra on every version.
"""

from __future__ import annotations

from typing import Any

from ..get_provider_info import get_provider_info


def _declared(conn_type: str) -> dict[str, Any]:
    for entry in get_provider_info()["connection-types"]:
        if entry["connection-type"] == conn_type:
            declared: dict[str, Any] = entry
            return declared
    raise KeyError(f"no connection type {conn_type!r} in the provider info")


def field_behaviour(conn_type: str) -> dict[str, Any]:
    """The standard fields hidden, relabeled and given placeholders, in Airflow 2's spelling
    (``hidden_fields`` where the provider info says ``hidden-fields``)."""
    declared: dict[str, Any] = _declared(conn_type).get("ui-field-behaviour", {})
    return {key.replace("-", "_"): value for key, value in declared.items()}


def form_widgets(conn_type: str) -> dict[str, Any]:
    """One wtforms field per declared field: a checkbox for a boolean, a masked input for a
    password, text otherwise (Airflow 2 takes no other field classes: an enum's values are named in
    its description; numbers are text, which the connection parser reads)."""
    from flask_appbuilder.fieldwidgets import BS3PasswordFieldWidget, BS3TextFieldWidget
    from flask_babel import lazy_gettext
    from wtforms import BooleanField, PasswordField, StringField

    widgets: dict[str, Any] = {}
    for name, field in _declared(conn_type).get("conn-fields", {}).items():
        schema = field["schema"]
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        label, description = lazy_gettext(field["label"]), field.get("description", "")
        default = schema.get("default")
        if "enum" in schema:
            description = f"{description} One of: {', '.join(schema['enum'])}.".strip()
        if "boolean" in types:
            widgets[name] = BooleanField(label, default=default, description=description)
        elif schema.get("format") == "password":
            widgets[name] = PasswordField(label, widget=BS3PasswordFieldWidget(), description=description)
        else:
            widgets[name] = StringField(
                label,
                widget=BS3TextFieldWidget(),
                description=description,
                default=None if default is None else str(default),
            )
    return widgets


def declared_form_methods() -> tuple[
    classmethod[Any, [], dict[str, Any]], classmethod[Any, [], dict[str, Any]]
]:
    """``get_connection_form_widgets`` and ``get_ui_field_behaviour`` for a hook class body, built from
    its ``conn_type``'s declarations. Airflow 2 reads them from the hook class's own ``__dict__``
    (an inherited one is not seen), so each hook assigns them in its body, on Airflow 2 only."""

    def widgets(cls: Any) -> dict[str, Any]:
        return form_widgets(cls.conn_type)

    def behaviour(cls: Any) -> dict[str, Any]:
        return field_behaviour(cls.conn_type)

    widgets.__name__, behaviour.__name__ = "get_connection_form_widgets", "get_ui_field_behaviour"
    return classmethod(widgets), classmethod(behaviour)
