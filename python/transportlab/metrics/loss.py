"""Drops and loss rates from the log: per flow, per link direction, by reason, and the
unintended-drop count every run reports."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from transportlab.artefacts.packetlog import (
    ARRIVAL,
    DEPARTURE,
    DROP,
    FLAG_CE_MARKED,
    FLAG_COPY,
    NO_DIRECTION,
    REASONS,
    UNINTENDED_REASONS,
)
from transportlab.metrics._records import col, take
from transportlab.metrics.logflows import Flow, flow_mask, flow_path

_PRE_LINK_REASONS = (10, 12)  # no route, not IPv4: dropped before the first link


def _reason_name(r: int) -> str:
    return REASONS.get(int(r), f"reason_{int(r)}")


def unintended_drops(records) -> int:
    """Number of unintended drops in the log: drop records whose reason the contract marks
    unintended (docs/packet-log.md). A correct run has 0."""
    return int(np.isin(col(records, "reason")[col(records, "event") == DROP], UNINTENDED_REASONS).sum())


def drops_by_reason(records, flow: Flow | None = None) -> pd.DataFrame:
    """Drop counts per (direction, reason): columns `direction` (int; 0xFFFF = engine-level,
    not on a link), `reason` (code), `name` (e.g. "queue_full"), `drops` (count of drop
    records, duplicate copies included). Restricted to `flow` if given; sorted by
    direction then reason; only non-zero rows."""
    m = col(records, "event") == DROP
    if flow is not None:
        m &= flow_mask(records, flow)
    d = take(records, m)
    g = pd.DataFrame({"direction": col(d, "direction").astype(np.int64), "reason": col(d, "reason").astype(np.int64)})
    out = g.groupby(["direction", "reason"]).size().rename("drops").reset_index()
    out.insert(2, "name", [_reason_name(r) for r in out["reason"]])
    return out[["direction", "reason", "name", "drops"]]


def link_loss(records, directions: Sequence[int] | None = None) -> pd.DataFrame:
    """Per link direction: `arrivals`, `departures`, `drops` (all reasons) and one column
    per drop reason seen (`queue_full`, `random_loss`, ...), record counts including
    duplicate copies; `loss_rate` = drops / arrivals (NaN with no arrivals). Indexed by
    `direction`; `directions` lists the ones to report (default: every direction in the
    log except the engine-level 0xFFFF)."""
    ev = col(records, "event")
    d = col(records, "direction").astype(np.int64)
    on_link = d != NO_DIRECTION
    if directions is None:
        directions = sorted(int(x) for x in np.unique(d[on_link]))
    idx = pd.Index(list(directions), name="direction")
    out = pd.DataFrame(index=idx)
    out["arrivals"] = pd.Series(d[ev == ARRIVAL]).value_counts().reindex(idx, fill_value=0)
    out["departures"] = pd.Series(d[ev == DEPARTURE]).value_counts().reindex(idx, fill_value=0)
    drops = pd.DataFrame({"direction": d[ev == DROP], "reason": col(records, "reason")[ev == DROP].astype(np.int64)})
    out["drops"] = drops["direction"].value_counts().reindex(idx, fill_value=0)
    by = drops.groupby(["direction", "reason"]).size().unstack(fill_value=0) if len(drops) else pd.DataFrame()
    for r in sorted(by.columns):
        out[_reason_name(r)] = by[r].reindex(idx, fill_value=0)
    marked = (ev == DEPARTURE) & ((col(records, "flags") & FLAG_CE_MARKED) != 0)
    out["marks"] = pd.Series(d[marked]).value_counts().reindex(idx, fill_value=0)
    out = out.astype(np.int64)
    out["loss_rate"] = out["drops"] / out["arrivals"].where(out["arrivals"] > 0)
    return out


def flow_loss(records, flow: Flow, path: Sequence[int] | None = None) -> dict:
    """Loss of one flow along its path.

    - `offered`: packets the flow put into the network = arrivals of original packets
      (not duplicate copies) at the first direction of the path, plus the flow's
      engine-level drops before any link (reasons 10 no route, 12 not IPv4);
    - `dropped`: drop records of original packets of the flow, anywhere (any direction of
      the path, or engine-level);
    - `loss_rate` = dropped / offered (NaN if nothing was offered);
    - `by_reason`: {reason name: count} of those original-packet drops;
    - `by_direction`: `drops_by_reason(records, flow)` (all drop records, copies included);
    - `marks`: ECN marks a queue put on the flow's packets = departure records with the
      `ce_marked` flag (a copy marked on its own counts too).
    `path` defaults to `flows.flow_path`.
    """
    p = tuple(path) if path is not None else flow_path(records, flow)
    fm = flow_mask(records, flow)
    fr = take(records, fm)
    ev, d, flags, reason = col(fr, "event"), col(fr, "direction"), col(fr, "flags"), col(fr, "reason")
    orig = (flags & FLAG_COPY) == 0
    offered = 0
    if p:
        offered += int(((ev == ARRIVAL) & (d == p[0]) & orig).sum())
    offered += int(((ev == DROP) & (d == NO_DIRECTION) & np.isin(reason, _PRE_LINK_REASONS) & orig).sum())
    dropped_mask = (ev == DROP) & orig
    dropped = int(dropped_mask.sum())
    codes, counts = np.unique(reason[dropped_mask], return_counts=True)
    return {
        "offered": offered,
        "dropped": dropped,
        "loss_rate": dropped / offered if offered else float("nan"),
        "by_reason": {_reason_name(c): int(n) for c, n in zip(codes, counts)},
        "by_direction": drops_by_reason(fr),
        "marks": int(((ev == DEPARTURE) & ((flags & FLAG_CE_MARKED) != 0)).sum()),
    }
