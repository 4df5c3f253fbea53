"""The shape of a JSON body: which key paths it has and the type of each value.

Two bodies have the same shape when they have the same key paths with the
same value types, whatever the values: ``{"order": {"id": 1}}`` and
``{"order": {"id": 2}}`` share the shape ``{order.id:int}``. Grouping
failing messages by shape shows "every message without ``order_id`` fails"
as one line, where body fingerprints would give one line per body.

Rules: a path joins object keys with ``.``; list elements share the path
``key[]`` (so lists of any length have one shape); only leaves are named,
with ``int``, ``float``, ``str``, ``bool`` or ``null``; an empty object is
``obj`` and an empty list ``list``; the body itself is ``$`` when it is not
an object (``{$:str}``). Keys containing ``.`` or ``[]`` are kept as they
are (rare; they can make two shapes look alike).
"""

from __future__ import annotations

from typing import Any

import orjson

_TYPES = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"))


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    for python_type, name in _TYPES:  # bool first: it is an int too
        if isinstance(value, python_type):
            return name
    return "obj" if isinstance(value, dict) else "list"


def _pairs(value: Any, path: str, into: set[tuple[str, str]]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _pairs(item, f"{path}.{key}" if path else str(key), into)
    elif isinstance(value, list) and value:
        for item in value:
            _pairs(item, f"{path or '$'}[]", into)
    else:
        into.add((path or "$", _type_name(value)))


def shape_of(body: Any) -> str:
    """The shape of a decoded JSON value, e.g. ``{items[].sku:str, order.id:int}``."""
    pairs: set[tuple[str, str]] = set()
    _pairs(body, "", pairs)
    return "{" + ", ".join(f"{path}:{kind}" for path, kind in sorted(pairs)) + "}"


def body_shape(text: str | None) -> str | None:
    """The shape of a body given as JSON text; None when it is not whole JSON.

    A sample cut at its length limit, or ciphertext, is not valid JSON: its
    shape is unknown, never guessed from the part that is there.
    """
    if not text:
        return None
    try:
        return shape_of(orjson.loads(text))
    except orjson.JSONDecodeError:
        return None
