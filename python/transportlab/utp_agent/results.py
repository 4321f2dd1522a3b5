"""The summary object of a uTP end (docs/agent.md, "uTP"): the fields the TCP and QUIC
agents report (bytes, goodput, completion time …) from what the transfer loop saw, plus
the uTP evidence (peer flags, `peer.num_utp_peers`) and libtorrent's uTP counters."""

from __future__ import annotations

import argparse
from typing import Any

import transportlab
from transportlab.utp_agent.transfer import Job, State


def summary(
    prog: str, lt, args: argparse.Namespace, job: Job, st: State | None, end_ns: int, error: str | None
) -> dict:
    params = {k: _plain(v) for k, v in vars(args).items()}
    params["cc_param"] = dict(args.cc_param)
    out: dict[str, Any] = {
        "subcommand": prog,
        "agent_version": transportlab.__version__,
        "params": params,
        "start_ns": st.start_ns if st else end_ns,
        "end_ns": end_ns,
        "stopped_by": (st.stopped_by if st else None) or ("error" if error else None),
    }
    transfer = _transfer(lt, job, st, error)
    if job.end == "client":
        out["results"] = transfer
    else:
        out["results"] = {
            "port": st.port if st else None,
            "implementation": transfer["implementation"],
            "implementation_version": transfer["implementation_version"],
            "bytes_sent": transfer["bytes_sent"],
            "bytes_received": transfer["bytes_received"],
            "samples": transfer["samples"],
            "connections": [transfer] if st and st.connected_ns is not None else [],
        }
    return out


def _transfer(lt, job: Job, st: State | None, error: str | None) -> dict:
    s = st.status if st else None
    sent = int(s.total_payload_upload) if s else 0
    received = int(s.total_payload_download) if s else 0
    moved = sent if job.role == "sender" else received
    sender = (
        ("client" if job.role == "sender" else "server")
        if job.end == "client"
        else ("server" if job.role == "sender" else "client")
    )
    complete = bool(st and st.complete_ns is not None and error is None and not job.bulk)
    start = st.connect_start_ns if st and st.connect_start_ns is not None else (st.connected_ns if st else None)
    end = (st.complete_ns if complete else st.end_ns) if st else None
    connected = st.connected_ns if st else None
    duration_s = (end - connected) / 1e9 if end is not None and connected is not None else None
    span_s = (end - start) / 1e9 if end is not None and start is not None else None
    out = {
        "mode": "upload" if sender == "client" else "download",
        "sender": sender,
        "implementation": "libtorrent",
        "implementation_version": lt.__version__,
        "workload": "bulk" if job.bulk else "download",
        "remote": f"{job.connect[0]}:{job.connect[1]}" if job.connect else (st.peer if st else None),
        "peer": st.peer if st else None,
        "complete": complete,
        "error": error,
        "content_bytes": job.content.size,
        "bytes": moved,
        "bytes_sent": sent,
        "bytes_received": received,
        "bytes_verified": int(s.total_wanted_done) if s and job.role == "receiver" else None,
        "redundant_bytes": int(s.total_redundant_bytes) if s else None,
        "connect_requested_ns": st.connect_requested_ns if st else None,
        "connect_start_ns": st.connect_start_ns if st else None,
        "connected_ns": connected,
        "first_byte_ns": st.first_byte_ns if st else None,
        "end_ns": end,
        "peer_left": st.peer_left if st else None,
        "stray_disconnects": list(st.stray_disconnects) if st else [],
        "performance_warnings": {k: dict(v) for k, v in st.performance_warnings.items()} if st else {},
        "connect_s": (connected - st.connect_start_ns) / 1e9
        if st and connected is not None and st.connect_start_ns is not None
        else None,
        "duration_s": duration_s,
        "completion_s": span_s if complete else None,
        "throughput_bps": 8 * moved / duration_s if duration_s else None,
        "goodput_bps": 8 * moved / span_s if span_s else None,
        "utp": {
            "verified": bool(st and st.utp_flag_seen and st.max_utp_peers >= 1),
            "peer_flag_utp": bool(st and st.utp_flag_seen),
            "max_num_utp_peers": st.max_utp_peers if st else 0,
            "counters": dict(st.last_counters) if st else {},
            "settings": dict(st.settings_in_effect) if st else {},
        },
        "samples": len(st.rows) if st else 0,
    }
    return out


def _plain(value: Any) -> Any:
    """An argument as JSON: paths as text, ADDR:PORT pairs as "ADDR:PORT"."""
    if isinstance(value, tuple):
        return f"{value[0]}:{value[1]}"
    if value is not None and not isinstance(value, bool | int | float | str | list):
        return str(value)
    return value
