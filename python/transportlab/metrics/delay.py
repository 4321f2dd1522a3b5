"""Per-packet delays from the log: sojourn at one link direction, one-way delay across a
path, and queueing delay.

Records are matched by packet: key = (packet_id, copy bit = flags bit 0). When the same key
occurs several times at one place (a copy of a copy), the k-th departure is matched with
the k-th arrival of that key, in time order. A duplicate copy has no arrival of its own at
the direction where it was created (the duplicate stage starts it there), so an unmatched
copy is matched with its original's arrival.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from transportlab.artefacts.packetlog import ARRIVAL, DEPARTURE, FLAG_COPY
from transportlab.metrics._records import actual_t, col, take
from transportlab.metrics.logflows import Flow, flow_mask, flow_path


def _keys(records) -> np.ndarray:
    return (col(records, "packet_id").astype(np.uint64) << np.uint64(1)) | (
        col(records, "flags").astype(np.uint64) & np.uint64(FLAG_COPY)
    )


def _rank_within_key(key: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Occurrence number (0, 1, ...) of each element among those with the same key, in time order."""
    order = np.lexsort((t, key))
    ks = key[order]
    first = np.searchsorted(ks, ks, side="left")
    rank = np.empty(len(key), dtype=np.int64)
    rank[order] = np.arange(len(key), dtype=np.int64) - first
    return rank


def _match(key_from: np.ndarray, t_from: np.ndarray, key_to: np.ndarray, t_to: np.ndarray) -> np.ndarray:
    """For each `to` event, the index into the `from` events of its matching earlier event
    (same key, same occurrence rank; an unmatched copy falls back to its original's first
    occurrence), or -1 when there is none. Vectorised: two sorts and binary searches."""
    n_from = len(key_from)
    out = np.full(len(key_to), -1, dtype=np.int64)
    if n_from == 0 or len(key_to) == 0:
        return out
    order = np.lexsort((t_from, key_from))
    ks = key_from[order]
    rank = _rank_within_key(key_to, t_to)
    pos = np.searchsorted(ks, key_to, side="left") + rank
    ok = pos < n_from
    ok[ok] = ks[pos[ok]] == key_to[ok]
    out[ok] = order[pos[ok]]
    copy = ~ok & ((key_to & np.uint64(1)) == 1)
    if copy.any():
        orig = key_to[copy] & ~np.uint64(1)
        p = np.searchsorted(ks, orig, side="left")
        good = p < n_from
        good[good] = ks[p[good]] == orig[good]
        idx = np.flatnonzero(copy)
        out[idx[good]] = order[p[good]]
    return out


def _pair(
    records, first_direction: int, last_direction: int, flow: Flow | None, mark: Flow | None = None
) -> pd.DataFrame:
    mask = None if flow is None else flow_mask(records, flow)
    ev = col(records, "event")
    d = col(records, "direction")
    a_mask = (ev == ARRIVAL) & (d == first_direction)
    d_mask = (ev == DEPARTURE) & (d == last_direction)
    if mask is not None:
        a_mask &= mask
        d_mask &= mask
    arr = take(records, a_mask)
    dep = take(records, d_mask)
    # What the hosts experienced: real times (the kernel's stamp of the arrival, the
    # hand-over of the departure), not the model's (docs/metrics.md).
    ka, ta = _keys(arr), actual_t(arr).astype(np.int64)
    kd, td = _keys(dep), actual_t(dep).astype(np.int64)
    m = _match(ka, ta, kd, td)
    ok = m >= 0
    out = pd.DataFrame(
        {
            "packet_id": col(dep, "packet_id")[ok].astype(np.uint64),
            "copy": (col(dep, "flags")[ok] & FLAG_COPY).astype(bool),
            "size": col(dep, "size")[ok].astype(np.int64),
            "arrival_ns": ta[m[ok]],
            "departure_ns": td[ok],
        }
    )
    out["delay_ns"] = out["departure_ns"] - out["arrival_ns"]
    if mark is not None:
        out["_mark"] = flow_mask(dep, mark)[ok]
    return out.sort_values("departure_ns", kind="stable", ignore_index=True)


def sojourn(records, direction: int, flow: Flow | None = None) -> pd.DataFrame:
    """Per-packet delay at one link direction: departure − arrival, in ns.

    Arrival and departure records at `direction` are joined by (packet_id, copy bit) (see
    the module notes for duplicates); dropped packets have no departure and are absent.
    The delay includes queueing, serialisation and the direction's delay/jitter.
    Returns columns packet_id, copy (bool), size (bytes), arrival_ns, departure_ns,
    delay_ns (int ns), sorted by departure time (the order the next hop receives them).
    `flow=None` takes every flow at the direction.
    """
    return _pair(records, direction, direction, flow)


def one_way_delay(records, flow: Flow, path: Sequence[int] | None = None) -> pd.DataFrame:
    """Per-packet one-way delay across the flow's path: departure from the last direction
    − arrival at the first direction, in ns.

    `path` is the sequence of link direction indices (default: inferred by
    `flows.flow_path`). Packets dropped anywhere on the path are absent. A duplicate copy
    made on the path is timed from its original's arrival. Returns the same columns as
    `sojourn` (arrival_ns at the first direction, departure_ns from the last), sorted by
    departure time, i.e. in the order the receiver gets them — the order RFC 3550 jitter
    expects.
    """
    p = tuple(path) if path is not None else flow_path(records, flow)
    if not p:
        return _pair(take(records, np.zeros(len(records), dtype=bool)), 0, 0, None)
    return _pair(records, p[0], p[-1], flow)


def queueing_delay(
    records,
    direction: int,
    flow: Flow | None = None,
    rate_bps: float | None = None,
    fixed_delay_ns: float | None = None,
) -> pd.DataFrame:
    """Per-packet queueing delay at one link direction, in ns: sojourn − the packet's
    minimum possible sojourn.

    Two definitions of the minimum, chosen by the arguments:
    - `rate_bps` given (the direction's configured rate, bits/s): minimum = serialisation
      time 8·size/rate_bps (in ns) + `fixed_delay_ns` (configured delay, default 0). With a
      jitter distribution configured, the result also contains the jitter draw (may be
      negative for negative draws).
    - `rate_bps` None: minimum = the smallest sojourn observed at `direction` for packets
      of the same IP size (over all flows, not only `flow`). This is an estimate that also
      removes the smallest jitter draw seen; it is exact for an unjittered link when at
      least one packet of each size crossed an empty queue.
    Returns the `sojourn` columns plus `queueing_ns` (float ns).
    """
    all_flows = _pair(records, direction, direction, None, mark=flow)
    if rate_bps is not None:
        if rate_bps <= 0:
            raise ValueError(f"rate must be positive, got {rate_bps} bit/s")
        base = all_flows["size"].to_numpy(np.float64) * 8e9 / rate_bps + (fixed_delay_ns or 0.0)
    else:
        base = all_flows.groupby("size")["delay_ns"].transform("min").to_numpy(np.float64)
    out = all_flows.assign(queueing_ns=all_flows["delay_ns"].to_numpy(np.float64) - base)
    if flow is not None:
        out = out[out["_mark"].to_numpy()].drop(columns="_mark").reset_index(drop=True)
    return out
