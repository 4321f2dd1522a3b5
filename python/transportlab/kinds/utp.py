"""uTP (BEP 29) with a real implementation (docs/agent.md, "uTP"): libtorrent's
(`python -m transportlab.utp_agent`) or BitTorrent's reference libutp (the `agent`
binary's utp-server / utp-client). A download of `bytes` or a bulk transfer until
`stop`, LEDBAT with the implementation's own parameters per flow (`cc_params`)."""

from __future__ import annotations

import sys
from typing import Any

from transportlab.kinds.base import (
    Endpoints,
    Files,
    FlowKind,
    bulk_argv,
    client_argv,
    duration_arg,
    sender_results,
    server_argv,
    summary_args,
)
from transportlab.scenario.errors import FieldIssue
from transportlab.utp_agent.content import bulk_size
from transportlab.utp_agent.parameters import IMPLEMENTATIONS, LIBUTP_DATAGRAM_SIZE, NO_PACKET_SIZE, Parameter

AGENT_MODULE = "transportlab.utp_agent"


class Utp(FlowKind):
    name = "utp"
    ip_proto = 17
    fields = frozenset({"cc", "cc_params", "direction", "bytes", "mss", "implementation"})
    default_cc = "ledbat"

    def check(self, spec, given) -> None:
        if spec.mss is None or spec.implementation not in IMPLEMENTATIONS:
            return
        if spec.implementation in NO_PACKET_SIZE:
            raise FieldIssue(NO_PACKET_SIZE[spec.implementation], ("mss",))
        lo, hi = LIBUTP_DATAGRAM_SIZE
        if not lo <= spec.mss <= hi:
            raise FieldIssue(
                f"libutp's mss (its UDP datagram size, uTP header included) is {lo} to {hi} bytes", ("mss",)
            )

    def check_cc(self, spec) -> str:
        params = _parameters(spec.implementation)
        cc = spec.cc or self.default_cc
        if cc != self.default_cc:
            raise FieldIssue(f"uTP runs LEDBAT: cc is {self.default_cc}", ("cc",))
        for key, value in (spec.cc_params or {}).items():
            if key not in params:
                takes = f"it takes {', '.join(params)}" if params else "it takes none"
                raise FieldIssue(
                    f"not a uTP parameter {spec.implementation} exposes ({takes})", ("cc_params", key), value
                )
            problem = _value_problem(params[key], value)
            if problem:
                raise FieldIssue(f"{spec.implementation}'s {key} {problem}", ("cc_params", key), value)
        return cc

    def endpoints(self, flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
        if flow.implementation == "libutp":
            return _libutp_endpoints(flow, server_addr, files, serve_for_s)
        server_sends = flow.direction == "download"
        common = ["--implementation", str(flow.implementation)]
        if flow.bytes:
            common += ["--bytes", str(flow.bytes), "--content-seed", str(flow.seed)]
        else:
            common += ["--bytes", str(bulk_size(flow.end - flow.start))]
        for key, value in sorted(flow.cc_params.items()):
            common += ["--cc-param", f"{key}={int(value)}"]
        agent = [sys.executable, "-m", AGENT_MODULE]
        server = agent + ["server", "--bind", f"0.0.0.0:{flow.port}", "--duration", duration_arg(serve_for_s)]
        server += ["--role", "sender" if server_sends else "receiver", *common]
        server += summary_args(files.server_summary, files.server_series)
        client = agent + ["client", "--connect", f"{server_addr}:{flow.port}"]
        client += ["--role", "receiver" if server_sends else "sender", *common]
        if not flow.bytes:
            client += ["--duration", duration_arg(flow.end - flow.start)]
        client += summary_args(files.client_summary, files.client_series)
        return Endpoints(server, client)

    def metrics(self, run, flow, client, server) -> dict[str, Any]:
        sender, side = sender_results(client, server)
        counters = (sender.get("utp") or {}).get("counters") or {}
        ends = [client, *(server.get("connections") or [])]
        # libtorrent's ends check that the transfer was uTP; a libutp socket speaks
        # nothing else, so a libutp flow has no check to report (None).
        verified = [e["utp"]["verified"] for e in ends if e.get("utp")]
        # rtt_ms stays unset: libtorrent exposes no uTP socket RTT, only its request
        # round-trip estimate (peer_info.rtt, the series' rtt_ms column); probes measure RTT.
        return {
            "utp_verified": all(verified) if verified else None,
            "lost_packets": counters.get("utp_packet_loss"),
            "timeouts": counters.get("utp_timeout"),
        }


def _libutp_endpoints(flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
    """The `agent` binary's utp-server (one connection) and utp-client, both with the
    flow's libutp parameters (LEDBAT runs at whichever end sends)."""
    params = [arg for key, value in sorted(flow.cc_params.items()) for arg in ("--cc-param", f"{key}={int(value)}")]
    if flow.mss:
        params += ["--datagram-size", str(flow.mss)]
    server = server_argv("utp-server", flow.port, files, serve_for_s, once=False) + params
    client = client_argv("utp-client", server_addr, flow.port, files) + bulk_argv(flow) + params
    return Endpoints(server, client)


def _parameters(implementation: str | None) -> dict[str, Parameter]:
    known = ", ".join(IMPLEMENTATIONS)
    if implementation is None:
        raise FieldIssue(f"a utp flow names its implementation: one of {known}", ("implementation",))
    if implementation not in IMPLEMENTATIONS:
        raise FieldIssue(f"not a uTP implementation; expected one of {known}", ("implementation",), implementation)
    return IMPLEMENTATIONS[implementation]


def _value_problem(p: Parameter, value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
        return f"is a whole number ({p.unit})"
    if not p.min <= value <= p.max:
        return f"is {p.min} to {p.max} {p.unit}"
    return None
