"""Stage metrics, its one entry that reads files: computes a run's `metrics.json`
(a MetricsRecord) from its raw artefacts, read through `artefacts.rundir`. Definitions
are those of `transportlab.metrics`; kind-specific fields come from the flow's kind."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import numpy as np

from transportlab import contract
from transportlab import metrics as M
from transportlab.artefacts.records import MetricsRecord
from transportlab.artefacts.rundir import RunDir
from transportlab.kinds import kind
from transportlab.metrics._records import actual_t

# A link's drops by reason: the link model's own reasons (the engine's are unintended and
# counted for the run as a whole).
_LINK_REASONS = tuple(
    name for code, name in contract.drop_reasons().items() if code not in contract.unintended_reasons()
)


def _ip(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))


def _data_flow(records, flow: dict, addresses: dict) -> M.Flow | None:
    """The exact 5-tuple of a flow's data packets, found in the log: the client's port is
    ephemeral, everything else is known from the scenario."""
    client, server = _ip(addresses[flow["from"]]), _ip(addresses[flow["to"]])
    upload = flow["direction"] == "upload"
    src, dst = (client, server) if upload else (server, client)
    proto = kind(flow["protocol"]).ip_proto
    table = M.flows(records)
    best = None
    for f, n in zip(table["flow"], table["records"]):
        port_ok = f.dport == flow["port"] if upload else f.sport == flow["port"]
        if f.src == src and f.dst == dst and f.proto == proto and port_ok and (best is None or n > best[1]):
            best = (f, n)
    return best[0] if best else None


def _stats_ms(values_ns) -> dict | None:
    v = np.asarray(values_ns, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return None
    s = M.summarize(v / 1e6)
    return {k: s[k] for k in ("mean", "p50", "p95", "p99")}


def flow_metrics(run: RunDir, records, flow: dict, scen: dict, directions: list[dict], t0_ns: int) -> dict:
    out: dict = {
        "protocol": flow["protocol"],
        "cc": flow.get("cc"),
        "from": flow["from"],
        "to": flow["to"],
        "direction": flow["direction"],
    }
    client = (run.summary(f"{flow['name']}-client") or {}).get("results", {})
    server = (run.summary(f"{flow['name']}-server") or {}).get("results", {})
    f = _data_flow(records, flow, scen["addresses"])
    if f is None:
        return {**out, "bytes_delivered": 0, "throughput_bps": 0.0, "error": "no packets of this flow in the log"}
    # A leg is inside its multipath direction, not a hop of its own.
    path = [i for i in M.flow_path(records, f) if not directions[i]["leg"]]
    dirs = [directions[i] for i in path]
    rates = [(d["spec"].get("rate") or float("inf"), i) for i, d in zip(path, dirs)]
    bottleneck = min(rates)[1] if rates else None
    start_ns = t0_ns + int(flow["start_s"] * 1e9)
    delivered = M.bytes_delivered(records, f, path=path)
    dep = M.select(records, f, direction=path[-1], event=2) if path else None
    span = 0.0
    if dep is not None and len(dep):
        span = (int(actual_t(dep).max()) - start_ns) / 1e9
    finite = flow.get("bytes") or flow.get("objects")
    out.update(
        {
            "data": {"src": f.src, "dst": f.dst, "sport": f.sport, "dport": f.dport, "proto": f.proto},
            "path": list(path),
            "bottleneck": bottleneck,
            "bytes_delivered": int(delivered),
            # Bytes that crossed the last link over the flow's active time (first start to
            # last delivery): what the network carried, retransmissions included.
            "throughput_bps": delivered * 8 / span if span > 0 else 0.0,
            # The client measures set-up to close whichever way the data flows.
            "goodput_bps": client.get("goodput_bps"),
            "complete": client.get("complete"),
            "completion_s": client.get("completion_s") if finite and client.get("complete") else None,
        }
    )
    out.update(kind(flow["protocol"]).metrics(run, flow, client, server))
    if out.get("records_goodput_bps") is not None and rates and min(rates)[0] != float("inf"):
        out["bandwidth_efficiency"] = M.bandwidth_efficiency(out["records_goodput_bps"], min(rates)[0])
    if bottleneck is not None and not directions[bottleneck]["spec"].get("multipath"):
        spec = directions[bottleneck]["spec"]
        q = M.queueing_delay(
            records, bottleneck, f, rate_bps=spec.get("rate"), fixed_delay_ns=int(spec.get("delay", 0) * 1e9)
        )
        out["queueing_delay_ms"] = _stats_ms(q["queueing_ns"].to_numpy())
    out.update(_path_metrics(records, f, path, delivered, dep))
    loss = M.flow_loss(records, f, path=path)
    out["loss_rate"] = loss.get("loss_rate")
    out["drops"] = {k: int(v) for k, v in loss.get("by_reason", {}).items()}
    out["marks"] = loss["marks"]
    out.update(_wire_counts(records, f))
    return out


def _path_metrics(records, f: M.Flow, path: list[int], delivered: int, dep) -> dict:
    """The S4 study's per-flow definitions, from the packet log, for every protocol:
    throughput over the span of arrivals at the receiver, the one-way delay of every data
    packet across the path, and its RFC 3393 ipdv."""
    out: dict = {"throughput_arrivals_bps": None, "path_delay_ms": None, "path_ipdv_ms": None}
    if dep is not None and len(dep) > 1:
        t = actual_t(dep)
        span_ns = int(t.max()) - int(t.min())
        if span_ns > 0:
            out["throughput_arrivals_bps"] = delivered * 8 / (span_ns / 1e9)
    if path:
        d = M.one_way_delay(records, f, path=path)
        d = d[~d["copy"]] if len(d) else d
        if len(d):
            out["path_delay_ms"] = _stats_ms(d["delay_ns"].to_numpy())
            out["path_ipdv_ms"] = M.ipdv_rfc3393(d["delay_ns"].to_numpy(dtype=float)) / 1e6
    return out


def _direction_specs(name: str, d: dict) -> dict[str, dict]:
    """SI parameters by direction name; a multipath direction counts as one path with
    its legs' joint capacity and slowest delay as recorded (`Multipath.capacity`,
    `.delay`; queueing not modelled as one queue) and each leg as a direction of its own."""
    mp = d.get("multipath")
    if not mp:
        return {name: d}
    legs = {f"{name}.{leg}": spec for leg, spec in mp["legs"]}
    return {name: {"rate": d["path_rate"], "multipath": True, "delay": d["path_delay"]}, **legs}


def _wire_counts(records, f: M.Flow) -> dict:
    """Packets and bytes each end put on the network (arrivals at the first link they
    crossed), the E2 "bytes sent, packets sent": protocol overhead, retransmissions and
    acknowledgements included."""
    out = {}
    for end, flow in (("data_sender", f), ("data_receiver", M.Flow(f.dst, f.src, f.dport, f.sport, f.proto))):
        arr = M.select(records, flow, event=1)
        if len(arr):
            first = int(arr["direction"][0])
            arr = arr[arr["direction"] == first]
        out[f"packets_sent_by_{end}"] = int(len(arr))
        out[f"bytes_sent_by_{end}"] = int(np.asarray(arr["size"], dtype=np.int64).sum())
    return out


def write_metrics(run_dir: Path) -> MetricsRecord:
    run = RunDir(run_dir)
    scen = run.scenario.dump()
    t0_ns = run.t0_ns
    engine = run.engine_stats
    records = run.records
    # Directions with their SI parameters (from the scenario record, by name), numbered
    # as the engine numbered them.
    by_name: dict[str, dict] = {}
    for link in scen["links"]:
        for which in ("forward", "reverse"):
            by_name.update(_direction_specs(f"{link['name']}.{which}", link[which]))
    directions: list[dict] = [
        {"name": n, "spec": by_name.get(n, {}), "leg": i in run.leg_indices} for i, n in enumerate(run.direction_names)
    ]

    flows = {f["name"]: flow_metrics(run, records, f, scen, directions, t0_ns) for f in scen["flows"]}
    probes: dict[str, dict[str, Any]] = {}
    for p in scen["probes"]:
        summ = run.summary(p["name"])
        if summ is None:
            probes[p["name"]] = {"error": "probe wrote no summary"}
            continue
        res = summ["results"]
        probes[p["name"]] = {
            "rtt_ms": res.get("rtt"),
            "sent": res.get("sent"),
            "received": res.get("received"),
            "lost": res.get("lost"),
            "owd_forward_ms": res.get("owd_forward"),
            "owd_reverse_ms": res.get("owd_reverse"),
            "hops_us": M.probe_hops(records, run.series(p["name"]), p["port"]) if "port" in p else None,
        }

    # A run that stopped when its flows were done ended before its duration.
    end = run.t_end_ns
    window = (t0_ns, min(t0_ns + int(scen["duration_s"] * 1e9), end if end is not None else 2**63))
    links: dict[str, dict] = {}
    loss_table = M.link_loss(records, directions=list(range(len(directions))))
    merges = {d["name"]: d["merge"] for d in engine.get("directions", []) if d.get("merge")}
    for i, d in enumerate(directions):
        row = loss_table.loc[i]
        dep = M.select(records, direction=i, event=2)
        delivered_bits = int(np.asarray(dep["size"], dtype=np.int64).sum()) * 8
        cap = d["spec"].get("rate")
        links[d["name"]] = {
            "index": i,
            "delivered_bits": delivered_bits,
            "capacity_bps": cap,
            "utilisation": M.link_utilisation(records, i, cap, *window) if cap else None,
            "drops": {name: int(row.get(name, 0)) for name in _LINK_REASONS},
            "marks": int(row["marks"]),
            "merge": merges.get(d["name"]),
        }
    rates = [f["throughput_bps"] for f in flows.values() if f.get("throughput_bps") is not None]
    record = MetricsRecord.model_validate(
        {
            "run": {
                "scenario": scen["name"],
                "point": scen["point"]["label"],
                "values": scen["point"]["values"],
                "numeric": scen["point"]["numeric"],
                "repetition": scen["repetition"],
                "seed": scen["seed"],
                "run_id": scen["run_id"],
                "t0_ns": t0_ns,
                "duration_s": scen["duration_s"],
            },
            "flows": flows,
            "probes": probes,
            "links": links,
            "hosts": {
                host: {
                    "udp_datagrams_received": udp["InDatagrams"],
                    "udp_receive_buffer_errors": udp["RcvbufErrors"],
                    "udp_input_errors": udp["InErrors"],
                }
                for host, udp in run.host_udp_counters.items()
            },
            "jain_index": M.jain_index(rates) if len(rates) >= 2 else None,
            "window": _window_metrics(records, scen, flows, directions, t0_ns),
            "unintended_drops": int(engine.get("unintended_drops_total", M.unintended_drops(records))),
            "engine": engine.get("handover_lateness"),
        }
    )
    run.write_metrics(record)
    return record


def _window_metrics(records, scen: dict, flows: dict, directions: list[dict], t0_ns: int) -> dict | None:
    """The comparisons studies make over `analysis.window` (S3: 30–90 s): bytes per flow
    in the window, |D1 − D2| for two flows, utilisation of the shared bottleneck, and
    the time after the later flow joins until the two throughput lines first cross."""
    analysis = scen.get("analysis") or {}
    window = analysis.get("window")
    named = {n: f for n, f in flows.items() if "data" in f}
    if not window or not named:
        return None
    start, end = t0_ns + int(window[0] * 1e9), t0_ns + int(window[1] * 1e9)
    mflows = {n: M.Flow(**f["data"]) for n, f in named.items()}
    out: dict = {
        "start_s": window[0],
        "end_s": window[1],
        "bytes": {n: int(M.bytes_delivered(records, mflows[n], start, end, path=named[n]["path"])) for n in named},
    }
    bottlenecks = {f["bottleneck"] for f in named.values() if f.get("bottleneck") is not None}
    if len(bottlenecks) == 1:
        (b,) = bottlenecks
        cap = directions[b]["spec"].get("rate")
        out["bottleneck"] = directions[b]["name"]
        out["utilisation"] = M.link_utilisation(records, b, cap, start, end) if cap else None
        if len(named) == 2:
            a, c = named
            out["byte_difference"] = abs(out["bytes"][a] - out["bytes"][c])
            bin_ns = int(analysis.get("bin", 1.0) * 1e9)
            rates = M.throughput_by_flow(records, b, bin_ns, origin_ns=t0_ns, end_ns=end, flows=mflows)
            by_name = {f["name"]: f for f in scen["flows"]}
            join = t0_ns + int(max(by_name[a]["start_s"], by_name[c]["start_s"]) * 1e9)
            crossing = M.crossing_time(rates, join)
            out["convergence_s"] = crossing / 1e9 if crossing is not None else None
    return out
