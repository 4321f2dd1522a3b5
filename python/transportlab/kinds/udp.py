"""Constant-rate UDP from client to server (`udp-send` / `udp-recv` in docs/agent.md):
datagrams of `size` bytes at `rate` or every `interval`, optionally in bursts."""

from __future__ import annotations

from typing import Any

from transportlab.kinds.base import Endpoints, Files, FlowKind, agent_binary, duration_arg, server_argv, summary_args
from transportlab.scenario.errors import FieldIssue

PAYLOAD_RANGE = (16, 65507)


class Udp(FlowKind):
    name = "udp"
    ip_proto = 17
    fields = frozenset({"direction", "count", "rate", "interval", "size", "burst"})

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

    def endpoints(self, flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
        server = server_argv("udp-recv", flow.port, files, serve_for_s, once=False)
        client = [agent_binary(), "udp-send", "--to", f"{server_addr}:{flow.port}", "--size", str(flow.size)]
        client += summary_args(files.client_summary, None)
        client += ["--rate", f"{int(flow.rate)}bit"] if flow.rate else ["--interval", duration_arg(flow.interval)]
        client += ["--count", str(flow.count)] if flow.count else ["--duration", duration_arg(flow.end - flow.start)]
        if flow.burst > 1:
            client += ["--burst", str(flow.burst)]
        return Endpoints(server, client)

    def metrics(self, run, flow, client, server) -> dict[str, Any]:
        return {
            "received": server.get("received"),
            "sent": client.get("sent"),
            "jitter_rfc3550_ms": server.get("jitter_rfc3550_ms"),
            "ipdv_rfc3393_ms": server.get("ipdv_rfc3393_ms"),
            "one_way_delay_ms": server.get("owd"),
        }
