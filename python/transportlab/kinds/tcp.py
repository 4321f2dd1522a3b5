"""Kernel TCP: bulk (upload/download for a duration or N bytes), objects, and paced
records (`size` bytes every `interval`, received `ordered` or `unordered`), optional
TLS 1.3, the kernel's congestion controls and the lab's own as BPF programs (`tcp-server`
/ `tcp-client` in docs/agent.md, docs/bpf.md). Or HTTP (`application`): a download
served by nginx or Hypercorn to curl (docs/stacks.md)."""

from __future__ import annotations

from typing import Any

from transportlab import contract
from transportlab import metrics as M
from transportlab.kinds import base
from transportlab.kinds.base import Endpoints, Files, FlowKind
from transportlab.kinds.records import RECORD_RANGE, check_record_size, records_argv, records_flow_metrics
from transportlab.kinds.workloads import check_playout, cpu_seconds
from transportlab.scenario.errors import FieldIssue, refuse_given
from transportlab.stacks.web import AGENT, APPLICATIONS, DEFAULT_SERVER, SERVERS

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
        "veno",
        "westwood",
        "yeah",
    }
)
MSS_RANGE = (88, 65495)
KERNEL_TCP = "linux"
SMOLTCP = "smoltcp"
# Fields an HTTP flow (nginx or Hypercorn serving curl) has beside the common ones.
HTTP_FIELDS = frozenset({"cc", "direction", "bytes", "objects", "application", "http_server", "mss", "implementation"})
DELIVERIES = ("ordered", "unordered")


class Tcp(FlowKind):
    name = "tcp"
    ip_proto = 6
    fields = base.AGENT_TRANSFER_FIELDS | {"tls", "tcp_info_interval", "page", "http_server"}
    default_cc = "cubic"

    def check(self, spec, given) -> None:
        if spec.application != AGENT:
            _check_http(spec, given)
            return
        if "http_server" in given and spec.http_server != DEFAULT_SERVER:
            raise FieldIssue(
                f'http_server serves HTTP: set application too (the agent\'s flows are application "{AGENT}")',
                ("http_server",),
                spec.http_server,
            )
        check_playout(spec, given)
        # The kernel's (emulated; the simulator's own TCP when simulated); naming it lets a
        # sweep axis step from a uTP implementation to TCP (S0 E4). smoltcp: the
        # simulator's second TCP, refused when emulated.
        if spec.implementation not in (None, KERNEL_TCP, SMOLTCP):
            raise FieldIssue(
                f"tcp flows are {KERNEL_TCP} (the kernel's) or {SMOLTCP} (simulated only)", ("implementation",)
            )
        if spec.mss is not None and not MSS_RANGE[0] <= spec.mss <= MSS_RANGE[1]:
            raise FieldIssue(f"a tcp mss is {MSS_RANGE[0]} to {MSS_RANGE[1]} bytes", ("mss",))
        if "page" in given:
            self._check_page(spec, given)
        elif {"size", "interval", "delivery"} & given:
            self._check_records(spec, given)

    @staticmethod
    def _check_records(spec, given) -> None:
        """Paced records: the server writes one record of `size` bytes every `interval`
        until the flow stops; the client receives them as `delivery` says."""
        check_record_size(spec, "tcp")
        refuse_given(given, ("bytes", "objects"), "tcp records run until stop")
        _check_download(
            spec,
            given,
            "records",
            'tcp records are received "ordered" or "unordered" (a stream per record is quic\'s)',
            "unordered delivery reads records from the segments' payload, which TLS encrypts",
        )

    @staticmethod
    def _check_page(spec, given) -> None:
        """Web pages: the primary, then the secondaries, again and again until the flow
        stops; `delivery` "ordered" = objects back to back on the byte stream, "unordered"
        = msTCP (a sub-stream per object) received through the packet tap."""
        refuse_given(given, ("bytes", "objects", "size", "interval"), "tcp pages load until stop")
        _check_download(
            spec,
            given,
            "pages",
            'tcp pages are received "ordered" (one stream) or "unordered" (msTCP sub-streams)',
            "unordered delivery reads msTCP chunks from the segments' payload, which TLS encrypts",
        )
        if spec.page.framing is None:
            spec.page.framing = "mstcp" if spec.delivery == "unordered" else "plain"
        if spec.delivery == "unordered" and spec.page.framing == "plain":
            raise FieldIssue(
                'unordered delivery needs framing "mstcp": plain objects have no boundaries to find in '
                "out-of-order bytes",
                ("page", "framing"),
                spec.page.framing,
            )
        for k, v in [
            ("primary", spec.page.primary),
            *((f"secondaries.{i}", s) for i, s in enumerate(spec.page.secondaries)),
        ]:
            if v > RECORD_RANGE[1]:
                raise FieldIssue("a page object is at most 16 MiB", ("page", *k.split(".")), v)

    def check_cc(self, spec) -> str:
        cc = spec.cc or self.default_cc
        if cc not in contract.controllers("tcp"):
            avail = ", ".join(contract.controllers("tcp"))
            if cc in OTHER_LINUX_TCP_CC:
                raise FieldIssue(f"this kernel lacks tcp_{cc}; kernel TCP offers {avail}", ("cc",))
            if cc == "newreno":
                raise FieldIssue(f"the kernel calls NewReno 'reno'; kernel TCP offers {avail}", ("cc",))
            hint = ' (it runs with protocol = "quic")' if cc in contract.controllers("quic") else ""
            raise FieldIssue(f"unknown TCP congestion control; kernel TCP offers {avail}{hint}", ("cc",))
        base.check_cc_params("tcp", cc, spec.cc_params, f"TCP {cc}")
        if contract.implementation("tcp", cc) == "bpf" and spec.application != AGENT:
            raise FieldIssue(
                f"TCP {cc} is the lab's BPF program; {spec.http_server} and curl run the kernel's "
                f"own controllers ({', '.join(KERNEL_CCS)})",
                ("cc",),
            )
        if contract.implementation("tcp", cc) == "bpf":
            from transportlab.network.kernel_cc import support_problem

            if (problem := support_problem()) is not None:
                raise FieldIssue(
                    f"TCP {cc} is the lab's BPF program (docs/bpf.md) and this machine cannot load it: {problem}",
                    ("cc",),
                )
        return cc

    def bpf_congestion(self, flow) -> tuple[str, dict] | None:
        if flow.application != AGENT:
            return None  # refused at check_cc: a web server takes its namespace's kernel controller
        cc = flow.cc or self.default_cc
        return (cc, dict(flow.cc_params)) if contract.implementation("tcp", cc) == "bpf" else None

    def endpoints(self, flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
        if flow.application != AGENT:
            return _http_endpoints(flow, server_addr, files, serve_for_s)
        server = base.server_argv("tcp-server", flow.port, files, serve_for_s)
        client = base.client_argv("tcp-client", server_addr, flow.port, files)
        for argv in (server, client):
            if flow.cc:
                argv += ["--cc", flow.cc]
            if flow.tcp_info_interval:
                argv += ["--tcp-info-interval", base.duration_arg(flow.tcp_info_interval)]
            if flow.tls:
                argv.append("--tls")
        if flow.mss:
            client += ["--mss", str(flow.mss)]
        if flow.objects is not None:
            client += ["--objects", str(flow.objects.count), "--object-size", str(flow.objects.size)]
        elif flow.page is not None:
            client += ["--page-primary", str(flow.page.primary)]
            if flow.page.secondaries:
                client += ["--page-secondaries", ",".join(map(str, flow.page.secondaries))]
            client += [
                "--page-framing",
                flow.page.framing,
                "--duration",
                base.duration_arg(flow.end - flow.start),
                "--delivery",
                flow.delivery or "ordered",
                "--page-series",
                str(page_series(files)),
            ]
        elif flow.delivery is not None:
            client += records_argv(flow, files)
        else:
            client += base.bulk_argv(flow)
        return Endpoints(server, client)

    def metrics(self, run, flow, client, server) -> dict[str, Any]:
        sender, side = base.sender_results(client, server)
        # The kernel's own account of time spent limited by the receive window or the
        # send buffer: over 1 % of the flow's time means the host, not the network,
        # capped it, and the run says so.
        info = sender.get("tcp_info") or {}
        limited_us = info.get("rwnd_limited_us", 0) + info.get("sndbuf_limited_us", 0)
        series = run.series(f"{flow['name']}-{side}")
        out = {
            "retransmissions": sender.get("retransmits"),
            "retransmission_rate": M.retransmission_rate(info.get("total_retrans"), info.get("segs_out")),
            "cpu_s": cpu_seconds(client, server),
            "rtt_ms": base.srtt_stats(series),
            "window_limited": limited_us > 0.01 * 1e6 * (flow["end_s"] - flow["start_s"]),
            "impossible_window": impossible_window(series, run.t0_ns),
        }
        if client.get("mode") == "records":
            out.update(records_flow_metrics(run, flow, client, sender))
        if client.get("mode") == "page":
            out.update(page_metrics(run, flow["name"]))
        return out


# A congestion window or ssthresh (segments) no socket can have: 2^25 segments is 2 GiB even
# at the 64-byte minimum MSS, more than the largest send buffer Linux allows (INT_MAX
# bytes). 0x7fffffff is the kernel's "infinite" ssthresh before the first loss.
IMPOSSIBLE_WINDOW = 1 << 25
INFINITE_SSTHRESH = 0x7FFFFFFF


def impossible_window(series, t0_ns: int) -> str | None:
    """The first TCP_INFO sample of a sender's series whose window or ssthresh no socket
    can have, as "ssthresh 0x81104110, cwnd 721775368 at 13.0 s", else None. The kernel
    got such a value from a fault (docs/bpf.md, "A kernel fault"), and what the flow
    measured after it is not the congestion control's."""
    if series is None or not len(series) or not {"cwnd", "ssthresh", "t_ns"} <= set(series.columns):
        return None
    ssthresh = series["ssthresh"]
    bad = series[
        (series["cwnd"] >= IMPOSSIBLE_WINDOW) | ((ssthresh >= IMPOSSIBLE_WINDOW) & (ssthresh != INFINITE_SSTHRESH))
    ]
    if not len(bad):
        return None
    first = bad.iloc[0]
    return (
        f"ssthresh {int(first['ssthresh']):#x}, cwnd {int(first['cwnd'])} at {(int(first['t_ns']) - t0_ns) / 1e9:.1f} s"
    )


def _check_download(spec, given, what: str, delivery_issue: str, tls_issue: str) -> None:
    """What tcp records and pages share: the server sends (direction "download"), the
    client receives "ordered" (the default) or "unordered", and unordered reads the
    segments' payload, so not under TLS."""
    if "direction" in given and spec.direction != "download":
        raise FieldIssue(f'tcp {what} are sent by the server: direction must be "download"', ("direction",))
    spec.direction = "download"
    if spec.delivery is None:
        spec.delivery = "ordered"
    if spec.delivery not in DELIVERIES:
        raise FieldIssue(delivery_issue, ("delivery",), spec.delivery)
    if spec.delivery == "unordered" and spec.tls:
        raise FieldIssue(tls_issue, ("delivery",))


def page_series(files: Files):
    """The client's per-object series of web pages beside its TCP_INFO series."""
    return files.client_series.with_name(files.client_series.stem + "-page.arrow")


def page_metrics(run, name: str) -> dict[str, Any]:
    """Page time and the objects' time to first byte (docs/metrics.md), from the client's
    per-object series."""
    series = run.series(f"{name}-client-page")
    if series is None:
        return {"pages_completed": None, "page_time_ms": None, "object_ttfb_ms": None}
    pages = M.page_times(series)
    ttfb = M.object_ttfb(series)
    return {
        "pages_completed": int(len(pages)),
        "page_time_ms": M.ms_stats(pages),
        "object_ttfb_ms": M.ms_stats(ttfb),
    }


KERNEL_CCS = tuple(c for c in contract.controllers("tcp") if contract.implementation("tcp", c) != "bpf")


def _check_http(spec, given) -> None:
    """An HTTP download over kernel TCP: `application` says the HTTP and whether TLS,
    `http_server` the server; of tcp's own fields only the controller applies."""
    if spec.application not in APPLICATIONS:
        raise FieldIssue(
            f"a tcp flow's application is \"{AGENT}\" (the lab's agents) or HTTP: {', '.join(APPLICATIONS)} "
            f"(served by {' or '.join(SERVERS)} to curl)",
            ("application",),
            spec.application,
        )
    if spec.implementation not in (None, KERNEL_TCP):
        raise FieldIssue(f"kernel TCP is the one implementation of tcp flows: {KERNEL_TCP}", ("implementation",))
    if spec.http_server not in SERVERS:
        raise FieldIssue(f"the HTTP server is {' or '.join(SERVERS)}", ("http_server",), spec.http_server)
    # A field at its default says nothing (a sweep arm of the agent's may set tls = false).
    defaults = type(spec).model_fields
    for k in sorted(given - HTTP_FIELDS - base.COMMON_FIELDS):
        if getattr(spec, k) == defaults[k].default or (k == "cc_params" and not spec.cc_params):
            continue
        why = " (https and http2 are over TLS)" if k == "tls" else ""
        raise FieldIssue(f"{k} is not a field of an HTTP flow{why}", (k,))
    if "direction" in given and spec.direction != "download":
        raise FieldIssue(
            'an HTTP flow is a download (curl fetches from the server): direction is "download"', ("direction",)
        )
    spec.direction = "download"


def _http_endpoints(flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
    """The web stack end at both ends (`python -m transportlab.stacks web-server /
    web-client`): the server sets its namespace's controller and runs nginx or
    Hypercorn, the client runs curl."""
    import sys

    from transportlab.kinds.quic import GIVE_UP_MARGIN_S, STACK_END
    from transportlab.plan.schedule import CLIENT_GRACE_S, SERVER_GRACE_S  # schedule imports the kinds

    end = [sys.executable, "-m", STACK_END]
    common = ["--application", str(flow.application), "--http-server", str(flow.http_server), "--cc", str(flow.cc)]
    if flow.mss:  # TCP_MAXSEG of the server's listener, which its connections inherit
        common += ["--mss", str(flow.mss)]
    # objects: curl fetches them one after another on one connection (HTTP/1.1 without
    # pipelining, HTTP/2 on one stream at a time).
    size = ["--bytes", str(flow.bytes)] if flow.bytes else []
    if flow.objects is not None:
        size = ["--bytes", str(flow.objects.size), "--objects", str(flow.objects.count)]
    server = end + ["web-server", "--bind", f"0.0.0.0:{flow.port}", "--duration", f"{serve_for_s:.9g}", *common]
    server += size + ["--summary", str(files.server_summary)]
    client = end + ["web-client", "--connect", f"{server_addr}:{flow.port}", *common]
    client += size or ["--duration", f"{flow.end - flow.start:.9g}"]
    scenario_end = serve_for_s - SERVER_GRACE_S
    client += ["--give-up", f"{max(1.0, scenario_end - flow.start + CLIENT_GRACE_S - GIVE_UP_MARGIN_S):.9g}"]
    return Endpoints(server, client + ["--summary", str(files.client_summary)])
