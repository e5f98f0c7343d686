"""A small recursive checker of JSON values against langgraph_sdk/schema.py's
annotations (TypedDicts, Literals, unions, lists, dicts, NamedTuples).

check(value, Type) raises AssertionError naming the path of the first
mismatch. TypedDicts must have every required key; optional (NotRequired /
total=False) keys are checked when present; extra keys are allowed (the
server sends fields the TypedDicts leave out, such as a run's kwargs).
datetime fields arrive as ISO 8601 strings, as the SDK returns them.
"""

from __future__ import annotations

import collections.abc
import datetime
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from typing_extensions import NotRequired, is_typeddict

from langgraph_sdk import schema as _schema


def _hints(tp: Any) -> dict[str, Any]:
    return typing.get_type_hints(tp)


def _required_keys(tp: Any) -> list[str]:
    """A TypedDict's required keys. __required_keys__ misses NotRequired[...]
    written as a string annotation (schema.py uses postponed annotations)
    on some typing_extensions versions, so the hints are read too."""
    extras = typing.get_type_hints(tp, include_extras=True)
    optional = set(getattr(tp, "__optional_keys__", ()))
    out = []
    for key, hint in extras.items():
        if key in optional or getattr(get_origin(hint), "_name", None) == "NotRequired" or get_origin(hint) is NotRequired:
            continue
        out.append(key)
    return out


def _is_namedtuple(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def check(value: Any, tp: Any, path: str = "$") -> None:
    err = _check(value, tp, path)
    if err:
        raise AssertionError(err)


def _check(value: Any, tp: Any, path: str) -> str | None:
    if tp is Any or tp is object:
        return None
    if tp is None or tp is type(None):
        return None if value is None else f"{path}: expected null, got {value!r}"
    if isinstance(tp, typing.TypeVar):
        return None
    if isinstance(tp, typing.ForwardRef):  # e.g. the recursive "_JSONMap"
        tp = getattr(_schema, tp.__forward_arg__)
    if getattr(tp, "_is_protocol", False):  # Input's Python-object arms: JSON never is one
        return f"{path}: a JSON value is not a {tp.__name__}"
    origin = get_origin(tp)
    if origin is Literal:
        return None if value in get_args(tp) else f"{path}: {value!r} not one of {get_args(tp)}"
    if origin in (Union, types.UnionType):
        errs = [_check(value, arm, path) for arm in get_args(tp)]
        if any(e is None for e in errs):
            return None
        return f"{path}: {value!r} matches no arm of {tp}: " + "; ".join(e for e in errs if e)
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return f"{path}: expected {tp.__name__} object, got {type(value).__name__}"
        hints = _hints(tp)
        for key in _required_keys(tp):
            if key not in value:
                return f"{path}: {tp.__name__} lacks required key {key!r} (has {sorted(value)})"
        for key, sub in hints.items():
            if key in value:
                if e := _check(value[key], sub, f"{path}.{key}"):
                    return e
        return None
    if _is_namedtuple(tp):
        hints = _hints(tp)
        for key in tp._fields:
            if e := _check(getattr(value, key), hints.get(key, Any), f"{path}.{key}"):
                return e
        return None
    if origin in (list, collections.abc.Sequence, tuple) or tp in (list, tuple):
        if not isinstance(value, list):
            return f"{path}: expected a list, got {type(value).__name__}"
        args = get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                return f"{path}: expected {len(args)} elements, got {len(value)}"
            for i, (v, a) in enumerate(zip(value, args)):
                if e := _check(v, a, f"{path}[{i}]"):
                    return e
            return None
        item = args[0] if args else Any
        for i, v in enumerate(value):
            if e := _check(v, item, f"{path}[{i}]"):
                return e
        return None
    if origin in (dict, collections.abc.Mapping) or tp in (dict,):
        if not isinstance(value, dict):
            return f"{path}: expected an object, got {type(value).__name__}"
        args = get_args(tp)
        sub = args[1] if len(args) == 2 else Any
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{path}: key {k!r} is not a string"
            if e := _check(v, sub, f"{path}.{k}"):
                return e
        return None
    if tp is datetime.datetime:
        if not isinstance(value, str):
            return f"{path}: expected an ISO 8601 timestamp, got {value!r}"
        try:
            datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return f"{path}: {value!r} is not an ISO 8601 timestamp"
        return None
    if tp is bool:
        return None if isinstance(value, bool) else f"{path}: expected a boolean, got {value!r}"
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"{path}: expected an integer, got {value!r}"
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"{path}: expected a number, got {value!r}"
    if tp is str:
        return None if isinstance(value, str) else f"{path}: expected a string, got {value!r}"
    if isinstance(tp, type):
        return None if isinstance(value, tp) else f"{path}: expected {tp.__name__}, got {type(value).__name__}"
    raise TypeError(f"schema_check: unsupported annotation {tp!r} at {path}")
