"""Names shared with the Rust side, read from their one source, `contracts/contract.json`
(Rust tests check the crates against the same file; contracts/README.md): congestion
controllers and their parameters, drop reasons, the packet log's version, quinn-proto's
qlog titles."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from transportlab.locations import PROJECT_ROOT

PATH = Path(os.environ.get("TLAB_CONTRACT", PROJECT_ROOT / "contracts" / "contract.json"))


@cache
def _contract() -> dict[str, Any]:
    try:
        return json.loads(PATH.read_text())
    except (OSError, ValueError) as e:
        raise RuntimeError(f"{PATH}: cannot read the cross-language contract ({e})") from None


def controllers(protocol: str) -> tuple[str, ...]:
    """The congestion controllers a flow of `protocol` accepts, in the contract's order."""
    return tuple(c["name"] for c in _contract()["controllers"][protocol])


def parameters(protocol: str, controller: str) -> dict[str, dict[str, Any]]:
    """The `cc_params` a controller takes: name → {type, default, min/max or options, unit, meaning}."""
    entry = next(c for c in _contract()["controllers"][protocol] if c["name"] == controller)
    return {p["name"]: p for p in entry["parameters"]}


def implementation(protocol: str, controller: str) -> str:
    """Where `controller` is implemented: congestion, quinn, kernel or bpf (contracts/README.md)."""
    return next(c["implementation"] for c in _contract()["controllers"][protocol] if c["name"] == controller)


def parameter_problem(p: dict[str, Any], value: Any) -> str | None:
    """Why `value` does not fit the contract's description `p` of a parameter, or None."""
    if p["type"] == "choice":
        return None if value in p["options"] else f"is one of {', '.join(p['options'])}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"is a number ({p['type']})"
    if p["type"] == "integer" and not float(value).is_integer():
        return "is a whole number"
    lo, hi = p.get("min"), p.get("max")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        unit = f" {p['unit']}" if p.get("unit") else ""
        return f"is {lo} to {hi}{unit}"
    return None


def cross_parameter_problem(controller: str, values: dict[str, Any]) -> tuple[str, str] | None:
    """A rule between parameters that the per-parameter ranges cannot state, as
    (parameter, why), or None. Vegas: alpha must not exceed beta (as the congestion
    crate checks it)."""
    if controller == "vegas" and values.get("alpha", 2) > values.get("beta", 4):
        return "alpha", f"must not exceed beta ({values.get('beta', 4)})"
    return None


def resolve_parameters(
    protocol: str, controller: str, given: dict[str, Any]
) -> tuple[dict[str, Any], tuple[str, Any, str, bool] | None]:
    """Every parameter of `controller`, given or default, and the first problem with
    `given` as (key, value, why, unknown): a key the controller does not take (`unknown`,
    `why` says what it takes), a value outside the contract's description of it, or a rule
    between parameters; None when there is none."""
    spec = parameters(protocol, controller)
    for key, value in given.items():
        if key not in spec:
            return {}, (key, value, f"it takes {', '.join(spec) if spec else 'none'}", True)
        if (why := parameter_problem(spec[key], value)) is not None:
            return {}, (key, value, why, False)
    values = {k: given.get(k, p["default"]) for k, p in spec.items()}
    if (rule := cross_parameter_problem(controller, values)) is not None:
        return {}, (rule[0], values[rule[0]], rule[1], False)
    return values, None


def drop_reasons() -> dict[int, str]:
    return {int(r["code"]): r["name"] for r in _contract()["drop_reasons"]}


def unintended_reasons() -> tuple[int, ...]:
    return tuple(int(r["code"]) for r in _contract()["drop_reasons"] if r["unintended"])


def packet_log_format() -> tuple[int, int]:
    """(version, record size in bytes) of the packet log."""
    c = _contract()
    return int(c["packet_log_version"]), int(c["packet_log_record_size"])


def packet_log_events() -> dict[str, int]:
    """The code of each event a packet log record may be (`arrival`, `departure`, `drop`)."""
    return {e["name"]: int(e["code"]) for e in _contract()["packet_log_events"]}


def packet_log_flags() -> dict[str, int]:
    """Bit mask of each flag of a packet log record's `flags` byte, by name."""
    return {f["name"]: 1 << int(f["bit"]) for f in _contract()["packet_log_flags"]}


def queue_disciplines() -> dict[str, dict[str, Any]]:
    """The link model's queue disciplines by name: `aqm` (drops or marks early, so takes
    `ecn`) and `parameters` (the engine config's names, docs/engine-config.md)."""
    return {q["name"]: q for q in _contract()["queue_disciplines"]}


def quinn_qlog_title_prefixes() -> tuple[str, ...]:
    """How the titles of the qlogs quinn-proto writes for the lab begin (the agent's, the
    simulator's): quinn-proto 0.11 gives their RTTs in seconds."""
    return tuple(_contract()["quinn_qlog_title_prefixes"])
