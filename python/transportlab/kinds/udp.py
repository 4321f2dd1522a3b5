"""Constant-rate UDP from client to server (`udp-send` / `udp-recv` in docs/agent.md):
datagrams of `size` bytes at `rate` or every `interval`, optionally in bursts. With
`delivery = "unordered"` the datagrams are records (one record per datagram, the
head-of-line experiment's UDP arm): the receiver writes the records series of tcp and
quic flows and the flow gets their record metrics."""

from __future__ import annotations

from typing import Any

from transportlab.kinds.base import Endpoints, Files, FlowKind, agent_binary, duration_arg, server_argv, summary_args
from transportlab.kinds.records import records_metrics
from transportlab.kinds.workloads import check_playout, cpu_seconds, workload_metrics
from transportlab.scenario.errors import FieldIssue

PAYLOAD_RANGE = (16, 65507)
# A record is one datagram in one packet of a 1500-byte MTU: no IP fragmentation (a
# larger record is refused, not fragmented).
RECORD_PAYLOAD_MAX = 1472


class Udp(FlowKind):
    name = "udp"
    ip_proto = 17
    delivered_when_client_exits = False
    fields = frozenset({"direction", "count", "rate", "interval", "size", "burst", "delivery", "playout"})

    def check(self, spec, given) -> None:
        if "direction" in given and spec.direction != "upload":
            raise FieldIssue('udp flows send from `from` to `to`: direction must be "upload"', ("direction",))
        if spec.size is None:
            raise FieldIssue("a udp flow needs size (the datagram payload)", ("size",))
        if not PAYLOAD_RANGE[0] <= spec.size <= PAYLOAD_RANGE[1]:
            raise FieldIssue(f"a udp datagram payload is {PAYLOAD_RANGE[0]} to {PAYLOAD_RANGE[1]} bytes", ("size",))
        if (spec.rate is None) == (spec.interval is None):
            which = ("interval",) if spec.rate is not None else ("rate",)
            raise FieldIssue("a udp flow needs exactly one of rate and interval", which)
        if "playout" in given and "delivery" not in given:
            raise FieldIssue("playout applies to records: give delivery too", ("playout",))
        check_playout(spec, given)
        if "delivery" in given:
            if spec.delivery != "unordered":
                raise FieldIssue(
                    'udp records (one per datagram) are delivered as they arrive: delivery is "unordered"',
                    ("delivery",),
                    spec.delivery,
                )
            if spec.size > RECORD_PAYLOAD_MAX:
                raise FieldIssue(
                    f"a udp record is one datagram in one 1500-byte packet: at most {RECORD_PAYLOAD_MAX} bytes "
                    "(larger records are not fragmented)",
                    ("size",),
                    spec.size,
                )
            if spec.burst != 1:
                raise FieldIssue("udp records are one datagram per interval: burst does not apply", ("burst",))

    def endpoints(self, flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
        server = server_argv("udp-recv", flow.port, files, serve_for_s, once=False)
        if flow.delivery is not None:
            server += ["--record-series", str(records_series(files))]
        client = [agent_binary(), "udp-send", "--to", f"{server_addr}:{flow.port}", "--size", str(flow.size)]
        client += summary_args(files.client_summary, None)
        client += ["--rate", f"{int(flow.rate)}bit"] if flow.rate else ["--interval", duration_arg(flow.interval)]
        client += ["--count", str(flow.count)] if flow.count else ["--duration", duration_arg(flow.end - flow.start)]
        if flow.burst > 1:
            client += ["--burst", str(flow.burst)]
        return Endpoints(server, client)

    def metrics(self, run, flow, client, server) -> dict[str, Any]:
        out = {
            "received": server.get("received"),
            "sent": client.get("sent"),
            "jitter_rfc3550_ms": server.get("jitter_rfc3550_ms"),
            "ipdv_rfc3393_ms": server.get("ipdv_rfc3393_ms"),
            "one_way_delay_ms": server.get("owd"),
            # No retransmission_rate: UDP repairs nothing (its losses are `loss_rate`).
            "cpu_s": cpu_seconds(client, server),
        }
        if flow.get("delivery") is not None:
            series = run.series(f"{flow['name']}-server-records")
            out.update(workload_metrics(run, flow, series, client.get("sent")))
            out.update(udp_records_metrics(run, flow["name"], client, server))
        return out


def records_series(files: Files):
    """The receiver's per-record series beside the server's packet series."""
    return files.server_series.with_name(files.server_series.stem + "-records.arrow")


def udp_records_metrics(run, name: str, client: dict, server: dict) -> dict[str, Any]:
    """The record metrics of tcp and quic records. UDP measures no RTT: the round trip is
    taken as twice the smallest one-way record latency (a symmetric path without queueing)."""
    owd_min_ms = (server.get("owd") or {}).get("min_ms")
    rtt_us = 2 * owd_min_ms * 1e3 if owd_min_ms else None
    return records_metrics(
        run, name, server, {}, sent=client.get("sent"), min_rtt_us=rtt_us, series_stem=f"{name}-server-records"
    )
