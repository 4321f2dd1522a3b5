"""Workloads on records, shared by the kinds that carry records (docs/metrics.md): VoIP
frame statistics for flows with `playout`, records goodput, and both agents' CPU time."""

from __future__ import annotations

from typing import Any

from transportlab import metrics as M
from transportlab.scenario.errors import FieldIssue


def check_playout(spec, given) -> None:
    """`playout` (VoIP frames): only on records (`size` every `interval`), a non-empty list
    of distinct jitter buffers (each a positive duration, which the schema checks)."""
    if spec.playout is None:
        return
    for k in ("size", "interval"):
        if k not in given:
            raise FieldIssue(f"playout applies to records: give size and interval ({k} is missing)", (k,))
    if not spec.playout:
        raise FieldIssue('playout lists the jitter buffers to report (e.g. ["150ms", "200ms"])', ("playout",))
    twice = sorted({b for b in spec.playout if spec.playout.count(b) > 1})
    if twice:
        raise FieldIssue("playout lists each jitter buffer once", ("playout",), f"{twice[0] * 1e3:g}ms twice")


def workload_metrics(run, flow: dict, series, sent: int | None) -> dict[str, Any]:
    """`records_goodput_bps` of a records flow from its receiver's per-record series, and
    `voip` when the flow has `playout`."""
    if series is None:
        return {"records_goodput_bps": None}
    start_ns = run.t0_ns + int(round(flow["start_s"] * 1e9))
    out: dict[str, Any] = {"records_goodput_bps": M.records_goodput_bps(series, start_ns)}
    if flow.get("playout"):
        out["voip"] = voip(run, flow, series, sent or 0)
    return out


def cpu_seconds(client: dict, server: dict) -> dict[str, float | None] | None:
    """User and system CPU seconds of both agents (getrusage at their exit) and their
    sum; None for agents that did not report them."""
    out: dict[str, float | None] = {}
    for end, res in (("client", client), ("server", server)):
        for k in ("user", "sys"):
            out[f"{end}_{k}"] = res.get(f"cpu_{k}_s")
    if all(v is None for v in out.values()):
        return None
    known = [v for v in out.values() if v is not None]
    out["total"] = sum(known) if len(known) == 4 else None
    return out


def voip(run, flow: dict, series, sent: int) -> dict:
    """VoIP frame statistics per jitter buffer (`playout`), and the same per number of
    the scenario's other flows active when each frame was sent (docs/metrics.md)."""
    interval_ns = flow["interval"] * 1e9
    buffers = [b * 1e9 for b in flow["playout"]]
    send = M.frame_send_times(series, sent, interval_ns)
    groups = None
    if send is not None:
        others = [(f["start_s"], f["end_s"]) for f in run.scenario.dump()["flows"] if f["name"] != flow["name"]]
        groups = M.competing_counts((send - run.t0_ns) / 1e9, others)
    return M.voip_metrics(series, sent, buffers, groups=groups)
