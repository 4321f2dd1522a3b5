"""Names shared with the Rust side, read from their one source, `contracts/contract.json`
(Rust tests check the crates against the same file): congestion controllers and their
parameters, drop reasons, the packet log's version."""

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


def _controllers(transport: str) -> tuple[str, ...]:
    return tuple(c["name"] for c in _contract()["controllers"][transport])


def __getattr__(name: str) -> Any:
    # Read lazily so importing this module never fails on its own.
    values = {
        "KERNEL_TCP_CC": lambda: _controllers("tcp"),
        "QUIC_CC": lambda: _controllers("quic"),
        "REASONS": lambda: {int(r["code"]): r["name"] for r in _contract()["drop_reasons"]},
        "UNINTENDED_REASONS": lambda: tuple(int(r["code"]) for r in _contract()["drop_reasons"] if r["unintended"]),
        "LOG_VERSION": lambda: int(_contract()["packet_log_version"]),
        "LOG_RECORD_SIZE": lambda: int(_contract()["packet_log_record_size"]),
    }
    if name in values:
        return values[name]()
    raise AttributeError(name)
