"""QUIC: quinn (the default `implementation`) with the lab's congestion controllers
(`quic-server` / `quic-client` in docs/agent.md): bulk, objects on parallel streams,
constant-rate messages, or paced records (`size` bytes every `interval` with `delivery`:
the same records as tcp's). Or a third-party stack (quic-go, aioquic, ngtcp2; docs/stacks.md)
with its own controllers: an HTTP/3 download or upload of `bytes`, or a bulk download
until `stop`."""

from __future__ import annotations

import sys
from typing import Any

from transportlab import contract
from transportlab import metrics as M
from transportlab.artefacts.qlog import ensure_series, last_values
from transportlab.kinds import base
from transportlab.kinds.base import Endpoints, Files, FlowKind
from transportlab.kinds.records import check_record_size, records_argv, records_flow_metrics
from transportlab.kinds.workloads import check_playout, cpu_seconds
from transportlab.scenario.errors import FieldIssue, refuse_given
from transportlab.stacks.quic import IMPLEMENTATIONS, QUINN, STACKS, Stack

DATAGRAM_RANGE = (1200, 1472)
MESSAGE_RANGE = (16, 16 * 2**20)
DELIVERIES = ("ordered", "unordered", "streams")
# Fields only quinn's agent has.
QUINN_ONLY = frozenset({"cc_params", "objects", "streams", "rate", "interval", "size", "delivery", "playout"})
STACK_END = "transportlab.stacks"
AGENT = "agent"  # the lab's agents at both ends, speaking their own protocol
HTTP3 = "http3"
GIVE_UP_MARGIN_S = 2.5


class Quic(FlowKind):
    name = "quic"
    ip_proto = 17
    fields = base.AGENT_TRANSFER_FIELDS | {"streams", "rcvbuf", "qlog", "rate", "pacing"}
    default_cc = "cubic"

    def check(self, spec, given) -> None:
        if _stack(spec) is not None:
            self._check_stack(spec, given)
            return
        if not spec.pacing:
            raise FieldIssue(
                "quinn paces every connection and has no switch (quinn-proto 0.11); "
                f"{', '.join(s.name for s in STACKS.values() if s.pacer_switch)} can send unpaced",
                ("pacing",),
                spec.pacing,
            )
        if spec.application != AGENT:
            raise FieldIssue(
                f"quinn's ends are the lab's agents: application is \"{AGENT}\" (HTTP/3 is the third-party "
                f"stacks': {', '.join(STACKS)})",
                ("application",),
                spec.application,
            )
        if "playout" in given and "delivery" not in given:
            raise FieldIssue("playout applies to records: give delivery too", ("playout",))
        check_playout(spec, given)
        if "delivery" in given:
            self._check_records(spec, given)
        elif spec.size is not None or spec.rate is not None or spec.interval is not None:
            if spec.size is None:
                raise FieldIssue("constant-rate quic messages need size (bytes per message)", ("size",))
            if not MESSAGE_RANGE[0] <= spec.size <= MESSAGE_RANGE[1]:
                raise FieldIssue("a quic message is 16 bytes to 16 MiB", ("size",))
            if (spec.rate is None) == (spec.interval is None):
                which = ("interval",) if spec.rate is not None else ("rate",)
                raise FieldIssue("constant-rate quic messages need exactly one of rate and interval", which)
            refuse_given(given, ("bytes", "objects", "streams"), "constant-rate quic messages run until stop")
        if spec.mss is not None and not DATAGRAM_RANGE[0] <= spec.mss <= DATAGRAM_RANGE[1]:
            raise FieldIssue(
                f"a quic mss (datagram size) is {DATAGRAM_RANGE[0]} to {DATAGRAM_RANGE[1]} bytes", ("mss",)
            )

    @staticmethod
    def _check_records(spec, given) -> None:
        """Paced records, as tcp's: the server writes one record of `size` bytes (framing
        included) every `interval` until the flow stops; the client reads them as
        `delivery` says."""
        if spec.delivery not in DELIVERIES:
            raise FieldIssue(
                'quic records are received "ordered", "unordered" or "streams" (a stream per record)',
                ("delivery",),
                spec.delivery,
            )
        check_record_size(spec, "quic")
        refuse_given(given, ("bytes", "objects", "streams", "rate"), "quic records come every interval until stop")
        if "direction" in given and spec.direction != "download":
            raise FieldIssue('quic records are sent by the server: direction must be "download"', ("direction",))
        spec.direction = "download"

    @staticmethod
    def _check_stack(spec, given) -> None:
        """A third-party stack's flow: an HTTP/3 download or upload of `bytes`, or a bulk
        download until stop; nothing of quinn's agent applies."""
        name = spec.implementation
        stack = STACKS[name]
        if spec.rcvbuf != "default" and not stack.rcvbuf_switch:
            can = ", ".join(["quinn"] + [s.name for s in STACKS.values() if s.rcvbuf_switch])
            raise FieldIssue(f"{name}'s socket buffer cannot be set by the lab ({can} can)", ("rcvbuf",), spec.rcvbuf)
        # A field at its default says nothing (a sweep arm of quinn's may give it); a value
        # means something only quinn's agent does.
        for k in sorted(k for k in given & QUINN_ONLY if getattr(spec, k) != type(spec).model_fields[k].default):
            raise FieldIssue(f"{k} is a field of quinn's flows; {name} runs an HTTP/3 transfer of bytes", (k,))
        if spec.mss is not None and not DATAGRAM_RANGE[0] <= spec.mss <= DATAGRAM_RANGE[1]:
            raise FieldIssue(
                f"a quic mss (datagram size) is {DATAGRAM_RANGE[0]} to {DATAGRAM_RANGE[1]} bytes", ("mss",)
            )
        if "application" in given and spec.application != HTTP3:
            raise FieldIssue(f'{name} carries HTTP/3: application is "{HTTP3}"', ("application",), spec.application)
        spec.application = HTTP3
        if not spec.qlog:
            raise FieldIssue(f"{name}'s series come from its qlog: qlog stays true", ("qlog",))
        if not spec.pacing and not stack.pacer_switch:
            raise FieldIssue(f"{name}'s pacer cannot be switched off by the lab", ("pacing",), spec.pacing)
        if spec.bytes is None and spec.direction == "upload" and not stack.bulk_upload:
            raise FieldIssue(
                f"{name}'s client uploads a file: give bytes, or make the bulk transfer a download",
                ("direction",),
            )

    def check_cc(self, spec) -> str:
        stack = _stack(spec)
        if stack is not None:
            cc = spec.cc or stack.default_cc
            if cc not in stack.controllers:
                raise FieldIssue(
                    f"{stack.name} has no {cc}; it offers {', '.join(stack.controllers)} (the lab's own controllers "
                    "run on quinn)",
                    ("cc",),
                    cc,
                )
            if spec.cc_params:
                raise FieldIssue(f"{stack.name}'s controllers take no parameters from the lab", ("cc_params",))
            return cc
        cc = spec.cc or self.default_cc
        known = contract.controllers("quic")
        if cc not in known:
            raise FieldIssue(f"unknown QUIC congestion control; expected one of {', '.join(known)}", ("cc",))
        base.check_cc_params("quic", cc, spec.cc_params, cc)
        return cc

    def endpoints(self, flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
        if flow.implementation in STACKS:
            return _stack_endpoints(flow, server_addr, files, serve_for_s)
        server = base.server_argv("quic-server", flow.port, files, serve_for_s)
        client = base.client_argv("quic-client", server_addr, flow.port, files)
        if flow.qlog:
            server += ["--qlog", str(files.server_qlog)]
            client += ["--qlog", str(files.client_qlog)]
        # Both ends get the controller: the sending end's is the one that acts.
        for argv in (server, client):
            argv += ["--cc", str(flow.cc)]
            for key, value in sorted(flow.cc_params.items()):
                text = str(value).lower() if isinstance(value, bool) else str(value)
                argv += ["--cc-param", f"{key}={text}"]
            if flow.mss:
                argv += ["--datagram-size", str(flow.mss)]
            if flow.rcvbuf:
                # The kernel doubles a requested buffer (bookkeeping overhead); rcvbuf is
                # the resulting size, as net.core.rmem_default would set it.
                argv += ["--rcvbuf", str(flow.rcvbuf // 2)]
        if flow.objects is not None:
            client += [
                "--objects",
                str(flow.objects.count),
                "--object-size",
                str(flow.objects.size),
                "--streams",
                str(flow.streams),
            ]
        elif flow.delivery is not None:
            client += records_argv(flow, files)
        elif flow.size is not None:
            per_s = flow.rate / (8 * flow.size) if flow.rate else 1 / flow.interval
            client += [
                "--message-size",
                str(flow.size),
                "--message-rate",
                f"{per_s:.9g}",
                "--duration",
                base.duration_arg(flow.end - flow.start),
                "--direction",
                flow.direction,
            ]
        else:
            client += base.bulk_argv(flow)
            if flow.streams > 1:
                client += ["--streams", str(flow.streams)]
        return Endpoints(server, client)

    def metrics(self, run, flow, client, server) -> dict[str, Any]:
        sender, side = base.sender_results(client, server)
        stack = flow.get("implementation") in STACKS
        if stack:
            # A stack's series (and so its counters) come from its qlogs, made now.
            for end in ("client", "server"):
                ensure_series(run.raw, f"{flow['name']}-{end}")
        series = run.series(f"{flow['name']}-{side}")
        quic = last_values(series) if stack else sender.get("quic") or {}
        # QUIC never retransmits a packet (lost data goes out in new packets): its
        # counterpart of TCP's retransmissions is the packets declared lost, and of TCP's
        # retransmission rate those ÷ the packets sent (docs/metrics.md).
        out = {
            "lost_packets": quic.get("lost_packets"),
            "congestion_events": quic.get("congestion_events"),
            "retransmission_rate": M.retransmission_rate(quic.get("lost_packets"), quic.get("packets_sent")),
            "cpu_s": cpu_seconds(client, server),
            "rtt_ms": base.srtt_stats(series),
        }
        if client.get("mode") == "records":
            out.update(records_flow_metrics(run, flow, client, sender, min_rtt_us=quic.get("min_rtt_us")))
        return out


def _stack(spec) -> Stack | None:
    """The flow's third-party stack; None for quinn. An unknown name is refused."""
    name = spec.implementation
    if name in (None, QUINN):
        return None
    if name not in STACKS:
        raise FieldIssue(
            f"not a QUIC implementation; expected one of {', '.join(IMPLEMENTATIONS)}", ("implementation",), name
        )
    return STACKS[name]


def _stack_endpoints(flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
    """The stack end (`python -m transportlab.stacks`) at both ends: it runs the
    stack's own process, reads its qlog into the series and writes the agent's summary."""
    from transportlab.plan.schedule import CLIENT_GRACE_S, SERVER_GRACE_S  # schedule imports the kinds

    end = [sys.executable, "-m", STACK_END]
    common = ["--implementation", str(flow.implementation), "--cc", str(flow.cc)]
    if not flow.pacing:
        common.append("--no-pacing")
    if flow.rcvbuf:
        common += ["--rcvbuf", str(flow.rcvbuf // 2)]  # as quinn's agent is given it
    server = end + ["quic-server", "--bind", f"0.0.0.0:{flow.port}", "--duration", f"{serve_for_s:.9g}", *common]
    server += ["--summary", str(files.server_summary)]
    server += ["--qlog", str(files.server_qlog)]
    client = end + ["quic-client", "--connect", f"{server_addr}:{flow.port}", "--direction", flow.direction, *common]
    if flow.bytes:
        client += ["--bytes", str(flow.bytes)]
    else:
        client += ["--duration", f"{flow.end - flow.start:.9g}"]
    if flow.mss:  # the datagram size, as quinn's
        server += ["--datagram-size", str(flow.mss)]
        client += ["--datagram-size", str(flow.mss)]
    # A stack still running when the runner's grace is almost over has hung: its end
    # gives up before (its own start-up and qlog reading take a second or two), so the
    # run records the failure with the stack's stderr.
    scenario_end = serve_for_s - SERVER_GRACE_S
    client += ["--give-up", f"{max(1.0, scenario_end - flow.start + CLIENT_GRACE_S - GIVE_UP_MARGIN_S):.9g}"]
    client += ["--summary", str(files.client_summary)]
    client += ["--qlog", str(files.client_qlog)]
    return Endpoints(server, client)
