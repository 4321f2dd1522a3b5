"""The one qlog reader: a QUIC stack's qlog (JSON-SEQ as quic-go, ngtcp2 and quinn write
it, or JSON as aioquic does) turned into the series columns of the lab's own QUIC agent
(docs/agent.md, "QUIC series"), so every stack's flow is plotted, compared and queried
as quinn's is (docs/stacks.md, "Series from the qlog").

What a qlog says and how it becomes a column:

- `recovery:metrics_updated` carries the changed values only; each is carried forward:
  `congestion_window` (draft-01: `cwnd`) → `cwnd_bytes`, `bytes_in_flight`,
  `smoothed_rtt` → `srtt_us`, `min_rtt` → `min_rtt_us` (qlog's milliseconds as µs);
- `recovery:packet_lost` → `lost_packets` (cumulative);
- `recovery:congestion_state_updated` entering `recovery` → `congestion_events`
  (cumulative);
- `transport:packet_sent` → `packets_sent` (cumulative).

A column the stack's qlog cannot give (`silent`: aioquic and ngtcp2 log no congestion
states) is left empty (null), never zero: a stack that does not log congestion states has
no congestion events to report, which is not the same as having had none. A value
metrics_updated has not given yet is null too. Times: a qlog's times are milliseconds from its reference;
the caller says where that reference is on CLOCK_MONOTONIC (`QlogClock`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

RS = "\x1e"
COLUMNS = (
    "cwnd_bytes",
    "bytes_in_flight",
    "srtt_us",
    "min_rtt_us",
    "lost_packets",
    "congestion_events",
    "packets_sent",
)
# metrics_updated's fields (both names a draft used) and their scale into the column's unit.
_METRICS = {
    "congestion_window": ("cwnd_bytes", 1),
    "cwnd": ("cwnd_bytes", 1),
    "bytes_in_flight": ("bytes_in_flight", 1),
    "smoothed_rtt": ("srtt_us", 1000),
    "min_rtt": ("min_rtt_us", 1000),
}


class QlogError(ValueError):
    pass


@dataclass(frozen=True)
class Trace:
    """One connection's events: `time_ms` as the qlog gives it, `name`, `data`, and the
    header's reference time as wall-clock ns since the epoch when it gives one."""

    vantage_point: str | None
    reference_epoch_ns: int | None
    events: list[tuple[float, str, dict]]
    title: str | None = None


@dataclass(frozen=True)
class QlogClock:
    """Where qlog time 0 is on CLOCK_MONOTONIC: `monotonic_ns` when the trace's reference
    is known on that clock, else the trace's epoch reference mapped with
    `epoch_minus_monotonic_ns` (CLOCK_REALTIME − CLOCK_MONOTONIC, taken by the caller)."""

    monotonic_ns: int | None = None
    epoch_minus_monotonic_ns: int | None = None
    # aioquic writes absolute epoch milliseconds as event times (reference 0).
    absolute_epoch_times: bool = False

    def origin_ns(self, trace: Trace) -> int:
        if self.absolute_epoch_times:
            return -self._offset()
        if self.monotonic_ns is not None:
            return self.monotonic_ns
        if trace.reference_epoch_ns is None:
            raise QlogError("the qlog gives no reference time and none was given for it")
        return trace.reference_epoch_ns - self._offset()

    def _offset(self) -> int:
        if self.epoch_minus_monotonic_ns is None:
            raise QlogError("mapping epoch times to CLOCK_MONOTONIC needs the clocks' offset")
        return self.epoch_minus_monotonic_ns


def read_traces(path: Path) -> list[Trace]:
    """The traces of a qlog file, JSON-SEQ (records after RS bytes, or one per line) or
    JSON (`traces`: [...])."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as e:
        raise QlogError(f"{path}: {e.strerror}") from None
    head = text.lstrip(RS + " \n")
    if head.startswith("{") and '"traces"' in head[:200] and RS not in text[:10]:
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise QlogError(f"{path}: not JSON: {e}") from None
        return [_trace(t, t.get("events") or []) for t in doc.get("traces", [])]
    records = []
    for chunk in text.replace(RS, "\n").splitlines():
        chunk = chunk.strip()
        if not chunk:
            continue
        try:
            records.append(json.loads(chunk))
        except ValueError:
            continue  # a record cut short by the writer's exit; the rest stands
    if not records:
        raise QlogError(f"{path}: no qlog records")
    header, events = (records[0], records[1:]) if "time" not in records[0] else ({}, records)
    return [_trace(header.get("trace") or header, events)]


def _trace(header: dict, events: list[dict]) -> Trace:
    vp = (header.get("vantage_point") or {}).get("type")
    ref = (header.get("common_fields") or {}).get("reference_time")
    epoch_ns = None
    if isinstance(ref, dict) and ref.get("wall_clock_time"):
        epoch_ns = _rfc3339_ns(ref["wall_clock_time"])
    return Trace(
        vp,
        epoch_ns,
        [(float(e["time"]), e.get("name", ""), e.get("data") or {}) for e in events if "time" in e],
        header.get("title"),
    )


def _rfc3339_ns(text: str) -> int:
    # Python's parser takes at most microseconds: keep the fraction's digits ourselves.
    main, _, rest = text.partition(".")
    frac, zone = rest, ""
    for sep in ("Z", "+", "-"):
        if sep in rest:
            i = rest.index(sep)
            frac, zone = rest[:i], rest[i:]
            break
    base = datetime.fromisoformat(main + (zone.replace("Z", "+00:00") or "+00:00"))
    return int(base.timestamp()) * 1_000_000_000 + int((frac + "000000000")[:9] or 0)


def series(trace: Trace, clock: QlogClock, silent: tuple[str, ...] = (), interval_ns: int = 10_000_000) -> pd.DataFrame:
    """The trace as the agent's series: one row every `interval_ns` from the first event
    to the last (and one at the last), each column its value at that moment; `silent`
    columns null."""
    origin = clock.origin_ns(trace)
    rows: list[tuple[int, dict]] = []
    state: dict[str, float | None] = dict.fromkeys(COLUMNS)
    counts = {"lost_packets": 0, "congestion_events": 0, "packets_sent": 0}
    for time_ms, name, data in trace.events:
        changed = False
        if name == "recovery:metrics_updated":
            for key, (col, scale) in _METRICS.items():
                if data.get(key) is not None:
                    state[col] = float(data[key]) * scale
                    changed = True
        elif name == "recovery:packet_lost":
            counts["lost_packets"] += 1
            changed = True
        elif name == "recovery:congestion_state_updated":
            if data.get("new") == "recovery":
                counts["congestion_events"] += 1
                changed = True
        elif name == "transport:packet_sent":
            counts["packets_sent"] += 1
            changed = True
        if changed:
            rows.append((origin + int(round(time_ms * 1e6)), {**state, **counts}))
    return _resample(rows, set(COLUMNS) - set(silent), interval_ns)


def empty_series() -> pd.DataFrame:
    columns = {"conn": pd.Series(dtype="uint32"), "t_ns": pd.Series(dtype="int64")}
    return pd.DataFrame({**columns, **{c: pd.Series(dtype="UInt64") for c in COLUMNS}})


def _resample(rows: list[tuple[int, dict]], said: set[str], interval_ns: int) -> pd.DataFrame:
    if not rows:
        return empty_series()
    t = np.array([r[0] for r in rows], dtype=np.int64)
    order = np.argsort(t, kind="stable")
    t = t[order]
    grid = np.arange(t[0], t[-1], interval_ns, dtype=np.int64)
    grid = np.append(grid, t[-1])
    # The last event at or before each grid point.
    idx = np.searchsorted(t, grid, side="right") - 1
    frame = pd.DataFrame({"conn": np.zeros(len(grid), dtype=np.uint32), "t_ns": grid})
    for c in COLUMNS:
        if c not in said:
            frame[c] = pd.array([None] * len(grid), dtype="UInt64")
            continue
        values = np.array([rows[order[i]][1][c] for i in idx], dtype=float)
        frame[c] = pd.array([None if np.isnan(v) else int(round(v)) for v in values], dtype="UInt64")
    return frame


# --- a stack's qlog in a run folder ---------------------------------------------------
#
# The stack end (transportlab.stacks) only moves each qlog into raw/ with a sidecar saying
# how its times map to CLOCK_MONOTONIC and which columns the stack cannot give; the
# series are made from them at analysis (`ensure_series`), not while the run's clock runs.

CLOCK_SUFFIX = ".clock.json"


def write_clock(qlog_path: Path, clock: QlogClock, silent: tuple[str, ...]) -> None:
    sidecar = qlog_path.with_name(qlog_path.name + CLOCK_SUFFIX)
    sidecar.write_text(json.dumps({**asdict(clock), "silent": list(silent)}))


def qlog_series(qlog_path: Path) -> pd.DataFrame:
    """The series of a stack's qlog (its traces one after another, conn 0), by its sidecar."""
    try:
        meta = json.loads(qlog_path.with_name(qlog_path.name + CLOCK_SUFFIX).read_text())
    except (OSError, ValueError) as e:
        raise QlogError(f"{qlog_path}: no readable clock sidecar ({e})") from None
    silent = tuple(meta.pop("silent", ()))
    clock = QlogClock(**meta)
    frames = [series(t, clock, silent) for t in read_traces(qlog_path)]
    return pd.concat(frames, ignore_index=True) if frames else empty_series()


def ensure_series(raw: Path, stem: str) -> Path | None:
    """`raw/<stem>.arrow` from `raw/<stem>.sqlog` (connection 0) and `raw/<stem>-<n>.sqlog`
    (connection n), made once; None when there is no qlog with a sidecar to make it from."""
    import pyarrow as pa

    out = raw / f"{stem}.arrow"
    if out.exists():
        return out
    first = raw / f"{stem}.sqlog"
    if not first.with_name(first.name + CLOCK_SUFFIX).exists():
        return None
    paths = [first]
    while (nxt := raw / f"{stem}-{len(paths)}.sqlog").exists():
        paths.append(nxt)
    frames = []
    for n, path in enumerate(paths):
        frame = qlog_series(path)
        frames.append(frame.assign(conn=pd.Series([n] * len(frame), dtype="uint32")))
    table = pa.Table.from_pandas(pd.concat(frames, ignore_index=True), preserve_index=False)
    tmp = out.with_name(out.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    tmp.replace(out)
    return out


def last_values(frame: pd.DataFrame | None) -> dict:
    """A series' final values by column (null where the qlog said nothing)."""
    if frame is None or not len(frame):
        return dict.fromkeys(COLUMNS)
    first = frame[frame["conn"] == 0] if "conn" in frame else frame
    last = first.iloc[-1]
    return {c: None if c not in last or pd.isna(last[c]) else int(last[c]) for c in COLUMNS}
