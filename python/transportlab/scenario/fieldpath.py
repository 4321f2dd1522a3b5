"""Field paths: `links.bottleneck.forward.rate`, `flows.bulk.cc`, `links[0].forward`,
`sweep."links.bottleneck.forward.rate"`. Items of `links`, `flows` and `probes` are
addressed by name (or by `[index]`). Paths are checked against the schema, so a path may
name a field the file leaves unset (setting it creates it), but never an unknown one."""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Union

from pydantic import BaseModel

from transportlab.scenario.errors import MISSING

Segment = str | int

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\[(\d+)\]|([A-Za-z0-9_-]+))\s*')


class PathError(ValueError):
    pass


def parse_path(text: str) -> list[Segment]:
    """Split a path into keys (str) and list indices (int)."""
    out: list[Segment] = []
    pos, need_sep = 0, False
    if not text.strip():
        raise PathError("empty field path")
    while pos < len(text):
        if need_sep:
            if text[pos] == ".":
                pos += 1
            elif text[pos] != "[":
                raise PathError(f"bad field path {text!r} at character {pos + 1}")
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise PathError(f"bad field path {text!r} at character {pos + 1}")
        quoted, index, bare = m.groups()
        if index is not None:
            out.append(int(index))
        elif quoted is not None:
            out.append(quoted.replace('\\"', '"').replace("\\\\", "\\"))
        elif bare.isdigit():
            out.append(int(bare))
        else:
            out.append(bare)
        pos, need_sep = m.end(), True
    return out


def _key(seg: str) -> str:
    return seg if _BARE.fullmatch(seg) else '"' + seg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_path(segments: typing.Iterable[Segment], raw: Any = MISSING) -> str:
    """A path for messages. With the raw document, list items that have a unique simple
    name are shown by name (`links.bottleneck`) rather than by index (`links[0]`)."""
    text = ""
    cur = raw
    for seg in segments:
        if isinstance(seg, int):
            name = _item_name(cur, seg)
            text += f".{name}" if name is not None else f"[{seg}]"
        else:
            text += ("." if text else "") + _key(seg)
        cur = _child(cur, seg)
    return text


def _item_name(items: Any, index: int) -> str | None:
    if not isinstance(items, list) or not 0 <= index < len(items) or not isinstance(items[index], dict):
        return None
    name = items[index].get("name")
    if not isinstance(name, str) or not _BARE.fullmatch(name):
        return None
    if sum(1 for it in items if isinstance(it, dict) and it.get("name") == name) != 1:
        return None
    return name


def _child(cur: Any, seg: Segment) -> Any:
    if isinstance(seg, int) and isinstance(cur, list) and 0 <= seg < len(cur):
        return cur[seg]
    if isinstance(seg, str) and isinstance(cur, dict) and seg in cur:
        return cur[seg]
    return MISSING


def lookup(raw: Any, segments: typing.Iterable[Segment]) -> Any:
    """The raw value at a path of keys and indices, or MISSING."""
    cur = raw
    for seg in segments:
        cur = _child(cur, seg)
        if cur is MISSING:
            break
    return cur


# --- the schema as a tree ------------------------------------------------------------


def _unwrap(tp: Any) -> list[Any]:
    """The alternatives of a type, without Annotated and None."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        return [alt for arg in typing.get_args(tp) for alt in _unwrap(arg)]
    if tp is type(None):
        return []
    return [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items()}


def keys_of(root: type[BaseModel], segments: list[Segment]) -> list[str] | None:
    """The keys a table at this path accepts (None when it is not a table of fields)."""
    alts = [root]
    for seg in segments:
        alts = _step(alts, seg)
        if not alts:
            return None
    models = [a for a in alts if _is_model(a)]
    return list(_fields(models[0])) if models else None


def _step(alts: list[Any], seg: Segment) -> list[Any]:
    out = []
    for tp in alts:
        if _is_model(tp):
            if isinstance(seg, str) and seg in _fields(tp):
                out += _unwrap(_fields(tp)[seg])
        elif typing.get_origin(tp) is list and isinstance(seg, int):
            out += _unwrap(typing.get_args(tp)[0])
        elif typing.get_origin(tp) is dict and isinstance(seg, str):
            out += _unwrap(typing.get_args(tp)[1])
    return out


def set_path(raw: dict, text: str, value: Any, root: type[BaseModel]) -> list[Segment]:
    """Set `value` at a path in the raw document, creating missing tables. Returns the
    resolved path (names of list items replaced by their index). Raises PathError."""
    segments = parse_path(text)
    resolved: list[Segment] = []
    alts: list[Any] = [root]
    cur: Any = raw
    for n, seg in enumerate(segments):
        last = n == len(segments) - 1
        here = format_path(resolved, raw) or "the scenario"
        lists = [a for a in alts if typing.get_origin(a) is list]
        models = [a for a in alts if _is_model(a)]
        dicts = [a for a in alts if typing.get_origin(a) is dict]
        if lists and _is_model(_unwrap(typing.get_args(lists[0])[0])[0]):
            # A list of tables: select one item by name or index.
            if not isinstance(cur, list):
                raise PathError(f"{here} has no items to select {seg!r} from")
            index = _select(cur, seg, here)
            resolved.append(index)
            alts = _step(lists, index)
            if last:
                cur[index] = value
                return resolved
            cur = cur[index]
            continue
        if models and isinstance(seg, str):
            model = next((m for m in models if seg in _fields(m)), None)
            if model is None:
                known = ", ".join(_fields(models[0]))
                raise PathError(f"{here} has no field {seg!r} (fields: {known})")
            alts = _step([model], seg)
        elif dicts and isinstance(seg, str):
            alts = _step(dicts, seg)
        else:
            raise PathError(f"{here} is a value; it has no field {seg!r}")
        resolved.append(seg)
        if not isinstance(cur, dict):
            raise PathError(f"{here} is not a table (it is {cur!r})")
        if last:
            cur[seg] = value
            return resolved
        if seg not in cur:
            cur[seg] = {}
        cur = cur[seg]
    raise PathError(f"bad field path {text!r}")  # pragma: no cover - loop always returns


def _select(items: list, seg: Segment, here: str) -> int:
    if isinstance(seg, int):
        if not 0 <= seg < len(items):
            raise PathError(f"{here} has {len(items)} item(s); there is no [{seg}]")
        return seg
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == seg:
            return i
    names = [str(it.get("name", f"[{i}]")) for i, it in enumerate(items) if isinstance(it, dict)]
    raise PathError(f"{here} has no item named {seg!r} (there are: {', '.join(names) or 'none'})")
