"""Names shared with the Rust side, read from their one source, `contracts/contract.json`
(Rust tests check the crates against the same file; contracts/README.md): congestion
controllers and their parameters, drop reasons, the packet log's version."""

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


def drop_reasons() -> dict[int, str]:
    return {int(r["code"]): r["name"] for r in _contract()["drop_reasons"]}


def unintended_reasons() -> tuple[int, ...]:
    return tuple(int(r["code"]) for r in _contract()["drop_reasons"] if r["unintended"])


def packet_log_format() -> tuple[int, int]:
    """(version, record size in bytes) of the packet log."""
    c = _contract()
    return int(c["packet_log_version"]), int(c["packet_log_record_size"])


def packet_log_flags() -> dict[str, int]:
    """Bit mask of each flag of a packet log record's `flags` byte, by name."""
    return {f["name"]: 1 << int(f["bit"]) for f in _contract()["packet_log_flags"]}


def queue_disciplines() -> dict[str, dict[str, Any]]:
    """The link model's queue disciplines by name: `aqm` (drops or marks early, so takes
    `ecn`) and `parameters` (the engine config's names, docs/engine-config.md)."""
    return {q["name"]: q for q in _contract()["queue_disciplines"]}
