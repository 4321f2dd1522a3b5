"""Kernel TCP: bulk (upload/download for a duration or N bytes) and objects, optional
TLS 1.3, the kernel's congestion controls (`tcp-server` / `tcp-client` in docs/agent.md)."""

from __future__ import annotations

from typing import Any

from transportlab import contract
from transportlab.kinds.base import (
    Endpoints,
    Files,
    FlowKind,
    agent_binary,
    duration_arg,
    sender_results,
    server_argv,
    srtt_stats,
    summary_args,
)
from transportlab.scenario.errors import FieldIssue

# Linux congestion controls this kernel lacks: named so the error says so, not "unknown".
OTHER_LINUX_TCP_CC = frozenset(
    {
        "bic",
        "cdg",
        "dctcp",
        "highspeed",
        "htcp",
        "hybla",
        "illinois",
        "lp",
        "nv",
        "scalable",
        "vegas",
        "veno",
        "westwood",
        "yeah",
    }
)
MSS_RANGE = (88, 65495)
KERNEL_TCP = "linux"


class Tcp(FlowKind):
    name = "tcp"
    ip_proto = 6
    fields = frozenset({"cc", "direction", "bytes", "objects", "mss", "tls", "tcp_info_interval", "implementation"})
    default_cc = "cubic"

    def check(self, spec, given) -> None:
        # One implementation, the kernel's; naming it lets a sweep axis step from a uTP
        # implementation to TCP (S0 E4).
        if spec.implementation not in (None, KERNEL_TCP):
            raise FieldIssue(f"kernel TCP is the one implementation of tcp flows: {KERNEL_TCP}", ("implementation",))
        if spec.mss is not None and not MSS_RANGE[0] <= spec.mss <= MSS_RANGE[1]:
            raise FieldIssue(f"a tcp mss is {MSS_RANGE[0]} to {MSS_RANGE[1]} bytes", ("mss",))

    def check_cc(self, spec) -> str:
        cc = spec.cc or self.default_cc
        if cc not in contract.controllers("tcp"):
            avail = ", ".join(contract.controllers("tcp"))
            if cc in OTHER_LINUX_TCP_CC:
                hint = ' (the userspace one runs with protocol = "quic")' if cc in contract.controllers("quic") else ""
                raise FieldIssue(f"this kernel lacks tcp_{cc}; kernel TCP offers {avail}{hint}", ("cc",))
            if cc == "newreno":
                raise FieldIssue(f"the kernel calls NewReno 'reno'; kernel TCP offers {avail}", ("cc",))
            raise FieldIssue(f"unknown TCP congestion control; kernel TCP offers {avail}", ("cc",))
        return cc

    def endpoints(self, flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
        server = server_argv("tcp-server", flow.port, files, serve_for_s)
        client = [agent_binary(), "tcp-client", "--connect", f"{server_addr}:{flow.port}"]
        client += summary_args(files.client_summary, files.client_series)
        for argv in (server, client):
            if flow.cc:
                argv += ["--cc", flow.cc]
            if flow.tcp_info_interval:
                argv += ["--tcp-info-interval", duration_arg(flow.tcp_info_interval)]
            if flow.tls:
                argv.append("--tls")
        if flow.mss:
            client += ["--mss", str(flow.mss)]
        if flow.objects is not None:
            client += ["--objects", str(flow.objects.count), "--object-size", str(flow.objects.size)]
        else:
            client += ["--direction", flow.direction]
            client += (
                ["--bytes", str(flow.bytes)] if flow.bytes else ["--duration", duration_arg(flow.end - flow.start)]
            )
        return Endpoints(server, client)

    def metrics(self, run, flow, client, server) -> dict[str, Any]:
        sender, side = sender_results(client, server)
        # The kernel's own account of time spent limited by the receive window or the
        # send buffer: over 1 % of the flow's time means the host, not the network,
        # capped it, and the run says so.
        info = sender.get("tcp_info") or {}
        limited_us = info.get("rwnd_limited_us", 0) + info.get("sndbuf_limited_us", 0)
        return {
            "retransmissions": sender.get("retransmits"),
            "rtt_ms": srtt_stats(run, f"{flow['name']}-{side}"),
            "window_limited": limited_us > 0.01 * 1e6 * (flow["end_s"] - flow["start_s"]),
        }
