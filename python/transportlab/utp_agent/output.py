"""The agent's files, as the Rust agents write theirs (docs/agent.md): a summary JSON
object written atomically, and a series as an Arrow IPC file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa

from transportlab.utp_agent.session import COUNTERS

SERIES_SCHEMA = pa.schema(
    [
        ("conn", pa.uint32()),
        ("t_ns", pa.int64()),
        ("bytes", pa.uint64()),
        ("payload_rate_Bps", pa.uint64()),
        ("rtt_ms", pa.uint32()),
        *[(name, pa.uint64()) for name in COUNTERS],
    ]
)


def write_summary(path: Path, summary: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(tmp, path)


def write_series(path: Path, rows: list[dict]) -> None:
    columns = {name: [row.get(name) for row in rows] for name in SERIES_SCHEMA.names}
    table = pa.table(columns, schema=SERIES_SCHEMA)
    tmp = path.with_name(path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, SERIES_SCHEMA) as writer:
        writer.write_table(table)
    os.replace(tmp, path)
