"""Scenario files for the tests, built from Python values: one small TOML writer, so a
test states what its scenario is about (the link, the flows, the settings under test)
and the usual parts (hosts client and server, a link "bottleneck" between them, flows
from client to server) come from the defaults here instead of a copy in every file.

    scenario("both", link(FWD, {"delay": "10ms"}), flow("quic", cc="cubic"), duration="6s", seed=2)

Values are Python values (str, int, float, bool, list, dict for an inline table), or
`Raw` text written as it stands (a value under test, right or wrong); a part given as a
string is written as it stands too (a raw TOML fragment or table; top-level lines only
as the first part)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class Raw(str):
    """TOML text to write as it stands."""


def toml_value(value: Any) -> str:
    """`value` as an inline TOML value."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML value for {value!r}")


def toml_key(key: str) -> str:
    """A key, quoted unless it is bare (a dotted sweep path is one quoted key)."""
    return key if _BARE_KEY.match(key) else json.dumps(key)


def lines(fields: dict[str, Any]) -> str:
    """`key = value` lines; a None value is left out (an optional field not set)."""
    return "".join(f"{toml_key(k)} = {toml_value(v)}\n" for k, v in fields.items() if v is not None)


def table(header: str, fields: dict[str, Any], extra: str = "") -> str:
    """A table (`[header]`, or `[[header]]` when the header is written with brackets),
    then `extra`, raw TOML lines."""
    head = header if header.startswith("[") else f"[{header}]"
    return f"\n{head}\n{lines(fields)}{extra}\n"


def link(
    forward: dict | None = None,
    reverse: dict | None = None,
    *,
    name: str = "bottleneck",
    between: tuple[str, str] = ("client", "server"),
    **fields: Any,
) -> str:
    """One `[[links]]` entry; `forward` / `reverse` are the directions' inline tables."""
    head = {"name": name, "between": list(between), "forward": forward, "reverse": reverse}
    return table("[[links]]", head | fields)


def flow(
    protocol: str = "tcp",
    *,
    name: str = "bulk",
    src: str = "client",
    dst: str = "server",
    extra: str = "",
    **fields: Any,
) -> str:
    """One `[[flows]]` entry (`src`/`dst` are its `from`/`to`), then `extra` raw lines."""
    return table("[[flows]]", {"name": name, "from": src, "to": dst, "protocol": protocol} | fields, extra)


def probe(interval: str, *, name: str = "ping", src: str = "client", dst: str = "server") -> str:
    """One `[[probes]]` entry."""
    return table("[[probes]]", {"name": name, "from": src, "to": dst, "interval": interval})


def scenario(
    name: str,
    *parts: str,
    duration: str,
    hosts: Iterable[str] | Raw = ("client", "server"),
    **settings: Any,
) -> str:
    """The scenario text: name, duration, the top-level `settings` (seed, repetitions,
    stop_when, …), hosts, then the parts (links, flows, probes, other tables) in order."""
    top = {"name": name, "duration": duration} | settings | {"hosts": hosts if isinstance(hosts, Raw) else list(hosts)}
    return lines(top) + "".join(parts)
