"""Checks across the tables of a scenario: names that refer to hosts and links, unique
names, times within the scenario's duration, and that every flow and probe has a path.
Each problem is (field sub-path from the scenario root, problem, value)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from transportlab.scenario.errors import MISSING
from transportlab.scenario.graph import NoPath, route
from transportlab.scenario.tcp_rmem import TCP_RMEM, TCP_RMEM_FORM, parse_tcp_rmem

if TYPE_CHECKING:
    from transportlab.scenario.schema import Scenario

Problem = tuple[tuple, str, Any]


def _duplicates(names: list[str]) -> list[int]:
    seen: set[str] = set()
    out = []
    for i, n in enumerate(names):
        if n in seen:
            out.append(i)
        seen.add(n)
    return out


# Linux (6.x) keeps these per namespace but read-only outside the initial one: a host
# namespace inherits the machine's values. A flow's own socket buffer is the way.
NETNS_READ_ONLY = {f"net.core.{d}mem_{k}" for d in "rw" for k in ("default", "max")}
NETNS_READ_ONLY_WHY = ("read-only inside a host namespace on Linux; set the flow's socket buffer instead "
                       "(quic flows: rcvbuf = \"32MiB\", set with SO_RCVBUFFORCE, above rmem_max)")  # fmt: skip


def check_scenario(s: Scenario) -> list[Problem]:
    out: list[Problem] = []
    hosts, routers = s.hosts, s.routers
    for i in _duplicates(hosts):
        out.append((("hosts", i), "duplicate host name", hosts[i]))
    for i in _duplicates(routers):
        out.append((("routers", i), "duplicate router name", routers[i]))
    for i, r in enumerate(routers):
        if r in hosts:
            out.append((("routers", i), "is also a host; a node is either a host or a router", r))
    for i in _duplicates([link.name for link in s.links]):
        out.append((("links", i, "name"), "duplicate link name", s.links[i].name))

    nodes = set(hosts) | set(routers)
    for i, link in enumerate(s.links):
        for j, node in enumerate(link.between):
            if node not in nodes:
                known = f"hosts: {', '.join(hosts)}" + (f"; routers: {', '.join(routers)}" if routers else "")
                out.append(
                    (("links", i, "between", j), f"unknown node; declare it in hosts or routers ({known})", node)
                )
    attached = {n for link in s.links for n in link.between}
    for i, h in enumerate(hosts):
        if h not in attached:
            out.append((("hosts", i), "host is not attached to any link", h))
    for i, r in enumerate(routers):
        if r not in attached:
            out.append((("routers", i), "router is not attached to any link", r))

    # Probes without a name are called probe<index>.
    for i, p in enumerate(s.probes):
        if p.name is None:
            p.name = f"probe{i}"
    link_directions = [f"{link.name}.{w}" for link in s.links for w in ("forward", "reverse")]
    for i, d in enumerate(s.capture.directions or [] if s.capture else []):
        if d not in link_directions:
            known = ", ".join(link_directions)
            out.append((("capture", "directions", i), f"no such link direction; one of {known}", d))
    items = [("flows", i, f) for i, f in enumerate(s.flows)] + [("probes", i, p) for i, p in enumerate(s.probes)]
    names: list[str] = []
    for _, _, item in items:
        assert item.name is not None  # flows require a name; probes were named just above
        names.append(item.name)
    for k in _duplicates(names):
        kind, i, item = items[k]
        out.append(((kind, i, "name"), "duplicate name (flows and probes share one namespace)", item.name))
    if not items:
        out.append((("flows",), "nothing to run: add [[flows]] or [[probes]]", MISSING))

    # Routes are looked for only over a well-formed graph (the checks above passed).
    routable = not out
    edges = [(link.between[0], link.between[1]) for link in s.links]
    for kind, i, item in items:
        for end in ("from", "to"):
            node = getattr(item, "from_" if end == "from" else "to")
            if node in routers:
                out.append(((kind, i, end), "is a router; flows and probes run between hosts", node))
            elif node not in hosts:
                out.append(((kind, i, end), f"unknown host (hosts: {', '.join(hosts)})", node))
        if item.from_ == item.to:
            out.append(((kind, i, "to"), "from and to are the same host", item.to))
        elif routable and item.from_ in hosts and item.to in hosts:
            for a, b in ((item.from_, item.to), (item.to, item.from_)):
                try:
                    route(hosts, edges, a, b)
                except NoPath:
                    out.append(((kind, i, "to"), f"no path from {a!r} to {b!r} over the links", item.to))
                    break
        if item.start >= s.duration:
            out.append(
                ((kind, i, "start"), f"starts at or after the scenario's end (duration {s.duration:g}s)", MISSING)
            )
        end_field = "stop" if kind == "flows" else "until"
        end_value = getattr(item, end_field)
        if end_value is not None and end_value > s.duration:
            out.append(((kind, i, end_field), f"after the scenario's end (duration {s.duration:g}s)", MISSING))

    from transportlab.kinds import KINDS
    from transportlab.scenario.schema import FlowSpec

    ports: dict[tuple[str, str, int], int] = {}
    for kind, i, item in items:
        if item.port is None:
            continue
        transport = "tcp" if isinstance(item, FlowSpec) and KINDS[item.protocol].ip_proto == 6 else "udp"
        port_key = (item.to, transport, item.port)
        if port_key in ports:
            out.append(((kind, i, "port"), f"{transport} port already used on host {item.to!r}", item.port))
        ports[port_key] = i

    for i, link in enumerate(s.links):
        for which in ("forward", "reverse"):
            for host in getattr(link, which).pin or {}:
                if host not in hosts:
                    out.append((("links", i, which, "pin", host), f"unknown host (hosts: {', '.join(hosts)})", host))

    for host, values in s.sysctls.items():
        if host not in hosts:
            out.append((("sysctls", host), f"unknown host (hosts: {', '.join(hosts)})", host))
        for sysctl in values:
            if sysctl in NETNS_READ_ONLY:
                out.append((("sysctls", host, sysctl), NETNS_READ_ONLY_WHY, values[sysctl]))
            elif sysctl == TCP_RMEM and parse_tcp_rmem(values[sysctl]) is None:
                out.append((("sysctls", host, sysctl), f"must be {TCP_RMEM_FORM}", values[sysctl]))

    analysis = s.analysis
    if analysis.window is not None and analysis.window[1] > s.duration:
        out.append((("analysis", "window"), f"ends after the scenario's end (duration {s.duration:g}s)", MISSING))
    if analysis.bottleneck is not None and analysis.bottleneck not in {link.name for link in s.links}:
        out.append((("analysis", "bottleneck"), "unknown link", analysis.bottleneck))
    return out
