"""Computes a run's `metrics.json` from its raw artefacts (packet log, engine stats,
agent summaries and series). Definitions are those of `transportlab.metrics`."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.ipc as ipc

from . import metrics as M
from .packetlog import read_records

PROTO = {"tcp": 6, "udp": 17, "quic": 17}


def read_series(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    with ipc.open_file(path) as f:
        return f.read_all().to_pandas()


def read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def _ip(addr: str) -> int:
    return int(ipaddress.IPv4Address(addr))


def _data_flow(records, flow: dict, addresses: dict) -> M.Flow | None:
    """The exact 5-tuple of a flow's data packets, found in the log: the client's port is
    ephemeral, everything else is known from the scenario."""
    client, server = _ip(addresses[flow["from"]]), _ip(addresses[flow["to"]])
    upload = flow["direction"] == "upload"
    src, dst = (client, server) if upload else (server, client)
    table = M.flows(records)
    best = None
    for f, n in zip(table["flow"], table["records"]):
        port_ok = f.dport == flow["port"] if upload else f.sport == flow["port"]
        if f.src == src and f.dst == dst and f.proto == PROTO[flow["protocol"]] and port_ok:
            if best is None or n > best[1]:
                best = (f, n)
    return best[0] if best else None


def _stats_ms(values_ns) -> dict | None:
    v = np.asarray(values_ns, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return None
    s = M.summarize(v / 1e6)
    return {k: s[k] for k in ("mean", "p50", "p95", "p99")}


def flow_metrics(records, flow: dict, scen: dict, directions: list[dict], t0_ns: int, raw: Path) -> dict:
    out: dict = {"protocol": flow["protocol"], "cc": flow.get("cc"), "from": flow["from"], "to": flow["to"],
                 "direction": flow["direction"]}
    client = read_json(raw / f"{flow['name']}-client.json") or {}
    server = read_json(raw / f"{flow['name']}-server.json") or {}
    cres, sres = client.get("results", {}), server.get("results", {})
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
        span = (int(dep["t_ns"].max()) - start_ns) / 1e9
    out.update({
        "data": {"src": f.src, "dst": f.dst, "sport": f.sport, "dport": f.dport, "proto": f.proto},
        "path": list(path),
        "bottleneck": bottleneck,
        "bytes_delivered": int(delivered),
        # Bytes that crossed the last link over the flow's active time (first start to
        # last delivery): what the network carried, retransmissions included.
        "throughput_bps": delivered * 8 / span if span > 0 else 0.0,
        "goodput_bps": None,
        "completion_s": None,
        "complete": None,
    })
    if flow["protocol"] == "tcp":
        # The client measures set-up to close whichever way the data flows.
        out["goodput_bps"] = cres.get("goodput_bps")
        out["complete"] = cres.get("complete")
        if flow.get("bytes") or flow.get("objects"):
            out["completion_s"] = cres.get("completion_s") if cres.get("complete") else None
        sender = cres if cres.get("sender") == "client" else (sres.get("connections") or [{}])[0]
        out["retransmissions"] = sender.get("retransmits")
        series = read_series(raw / f"{flow['name']}-{'client' if cres.get('sender') == 'client' else 'server'}.arrow")
        if series is not None and len(series) and "srtt_us" in series:
            out["rtt_ms"] = _stats_ms(series.loc[series["srtt_us"] > 0, "srtt_us"].to_numpy() * 1e3)
        # The kernel's own account of time spent limited by the receive window or the
        # send buffer: over 1 % of the flow's time means the host, not the network,
        # capped it (DESIGN.md: a run warns when a flow was window-limited).
        info = sender.get("tcp_info") or {}
        limited_us = info.get("rwnd_limited_us", 0) + info.get("sndbuf_limited_us", 0)
        out["window_limited"] = limited_us > 0.01 * 1e6 * (flow["end_s"] - flow["start_s"])
    elif flow["protocol"] == "quic":
        out["goodput_bps"] = cres.get("goodput_bps")
        out["complete"] = cres.get("complete")
        if flow.get("bytes") or flow.get("objects"):
            out["completion_s"] = cres.get("completion_s") if cres.get("complete") else None
        client_sends = cres.get("sender") == "client"
        sender = cres if client_sends else (sres.get("connections") or [{}])[0]
        quic = sender.get("quic") or {}
        # QUIC never retransmits a packet (lost data goes out in new packets): its
        # counterpart of TCP's retransmissions is the packets declared lost.
        out["lost_packets"] = quic.get("lost_packets")
        out["congestion_events"] = quic.get("congestion_events")
        series = read_series(raw / f"{flow['name']}-{'client' if client_sends else 'server'}.arrow")
        if series is not None and len(series) and "srtt_us" in series:
            out["rtt_ms"] = _stats_ms(series.loc[series["srtt_us"] > 0, "srtt_us"].to_numpy() * 1e3)
    elif flow["protocol"] == "udp":
        out["received"] = sres.get("received")
        out["sent"] = cres.get("sent")
        out["jitter_rfc3550_ms"] = sres.get("jitter_rfc3550_ms")
        out["ipdv_rfc3393_ms"] = sres.get("ipdv_rfc3393_ms")
        out["one_way_delay_ms"] = sres.get("owd")
    if bottleneck is not None and not directions[bottleneck]["spec"].get("multipath"):
        spec = directions[bottleneck]["spec"]
        q = M.queueing_delay(records, bottleneck, f, rate_bps=spec.get("rate"), fixed_delay_ns=int(spec.get("delay", 0) * 1e9))
        out["queueing_delay_ms"] = _stats_ms(q["queueing_ns"].to_numpy())
    loss = M.flow_loss(records, f, path=path)
    out["loss_rate"] = loss.get("loss_rate")
    out["drops"] = {k: int(v) for k, v in loss.get("by_reason", {}).items()}
    out.update(_wire_counts(records, f))
    out.setdefault("rtt_ms", None)
    out.setdefault("retransmissions", None)
    out.setdefault("lost_packets", None)
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


def write_metrics(run_dir: Path, t0_ns: int) -> dict:
    raw = run_dir / "raw"
    scen = json.loads((run_dir / "scenario.json").read_text())
    engine = read_json(raw / "engine.json") or {}
    config = json.loads((raw / "engine-config.json").read_text())
    records = np.asarray(read_records(raw / "packets.tlog"))
    # Directions with their SI parameters (from the scenario record, by name).
    by_name = {}
    for link in scen["links"]:
        for which in ("forward", "reverse"):
            by_name.update(_direction_specs(f"{link['name']}.{which}", link[which]))
    # The engine numbers the legs of multipath directions after all directions.
    names = [d["name"] for d in config["directions"]] + [n for d in config["directions"] for n in d.get("leg_names", [])]
    directions = [{"name": n, "spec": by_name.get(n, {}), "leg": i >= len(config["directions"])} for i, n in enumerate(names)]

    flows = {f["name"]: flow_metrics(records, f, scen, directions, t0_ns, raw) for f in scen["flows"]}
    probes = {}
    for p in scen["probes"]:
        summ = read_json(raw / f"{p['name']}.json")
        if summ is None:
            probes[p["name"]] = {"error": "probe wrote no summary"}
            continue
        res = summ["results"]
        probes[p["name"]] = {"rtt_ms": res.get("rtt"), "sent": res.get("sent"), "received": res.get("received"),
                             "lost": res.get("lost"), "owd_forward_ms": res.get("owd_forward"), "owd_reverse_ms": res.get("owd_reverse")}

    # A run that stopped when its flows were done ended before its duration.
    end = raw / "t_end_ns"
    window = (t0_ns, min(t0_ns + int(scen["duration_s"] * 1e9), int(end.read_text()) if end.exists() else 2**63))
    links = {}
    loss_table = M.link_loss(records, directions=list(range(len(directions))))
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
            "drops": {
                "queue_full": int(row.get("queue_full", 0)),
                "random_loss": int(row.get("random_loss", 0)),
            },
        }
    rates = [f["throughput_bps"] for f in flows.values() if f.get("throughput_bps") is not None]
    window_metrics = _window_metrics(records, scen, flows, directions, t0_ns)
    metrics = {
        "run": {"scenario": scen["name"], "point": scen["point"]["label"], "values": scen["point"]["values"],
                "repetition": scen["repetition"], "seed": scen["seed"], "run_id": scen["run_id"],
                "t0_ns": t0_ns, "duration_s": scen["duration_s"]},
        "flows": flows,
        "probes": probes,
        "links": links,
        "jain_index": M.jain_index(rates) if len(rates) >= 2 else None,
        "window": window_metrics,
        "unintended_drops": int(engine.get("unintended_drops_total", M.unintended_drops(records))),
        "engine": engine.get("handover_lateness"),
    }
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1, default=_json_default))
    return metrics


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
    out: dict = {"start_s": window[0], "end_s": window[1], "bytes": {
        n: int(M.bytes_delivered(records, mflows[n], start, end, path=named[n]["path"])) for n in named}}
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


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    return str(o)
