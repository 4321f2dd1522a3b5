"""Lower a validated `Scenario` into the runner's inputs: the `Topology` (SI units, queues
in packets or bytes, traces loaded) and the flows and probes (`flows`)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, TypeVar

from transportlab.kinds import kind
from transportlab.plan.flows import Analysis, Capture, Flow, Objects, Page, Probe, Resolved
from transportlab.plan.seeds import derive_seed
from transportlab.plan.topology import Direction, GilbertElliott, Link, Multipath, Topology
from transportlab.scenario.queues import bdp_packets
from transportlab.scenario.schema import LegSpec, LinkSpec, PathSpec, Scenario

FIRST_PORT = 5201

T = TypeVar("T")


def _lowered(cls: type[T], src: object, **converted: Any) -> T:
    """`cls` with each field the scenario model spells the same copied from `src`, and the
    ones it lowers (other units, types or names) as `converted` gives them."""
    names = [f.name for f in dataclasses.fields(cls) if f.name not in converted]  # type: ignore[arg-type]
    return cls(**{n: getattr(src, n) for n in names}, **converted)


def _path(d: PathSpec, queue_packets: int | None) -> Direction:
    loss, ge = 0.0, None
    if isinstance(d.loss, float):
        loss = d.loss
    elif d.loss is not None:
        g = d.loss.gilbert_elliott
        ge = _lowered(GilbertElliott, g)
    return _lowered(
        Direction,
        d,
        queue_packets=queue_packets,
        queue_bytes=d.queue.bytes if d.queue is not None else None,
        queue_discipline=tuple(d.queue.engine_discipline().items()) if d.queue is not None else (),
        loss=loss,
        gilbert_elliott=ge,
        multipath=None,
    )


def _leg_queue_packets(leg: LegSpec) -> int | None:
    q = leg.queue
    if q is None:
        return None
    if q.bdp is not None:
        assert leg.rate is not None and q.rtt is not None  # checked by the schema
        return bdp_packets(leg.rate, q.rtt, q.bdp)
    return q.packets


def to_direction(link: LinkSpec, which: Literal["forward", "reverse"]) -> Direction:
    d = getattr(link, which)
    if d.legs is None:
        return _path(d, link.queue_packets(which))
    assert d.split is not None and d.merge is not None  # the schema fills them in
    shares = d.split.leg_shares(len(d.legs))
    return Direction(
        multipath=Multipath(
            legs=tuple((leg.name, _path(leg, _leg_queue_packets(leg))) for leg in d.legs),
            shares=tuple(shares) if shares is not None else None,
            batch=d.split.batch,
            merge=d.merge.enabled,
            t_reordering=d.merge.t_reordering,
            pin=tuple(sorted((d.pin or {}).items())),
        )
    )


def to_topology(s: Scenario) -> Topology:
    links = tuple(
        Link(
            name=link.name,
            a=link.between[0],
            b=link.between[1],
            forward=to_direction(link, "forward"),
            reverse=to_direction(link, "reverse"),
        )
        for link in s.links
    )
    return Topology(hosts=tuple(s.hosts), links=links)


def _ports(s: Scenario) -> tuple[list[int], list[int]]:
    """Explicit ports as given; the others numbered from FIRST_PORT, skipping used ones."""
    used = {f.port for f in s.flows if f.port} | {p.port for p in s.probes if p.port}
    nxt = FIRST_PORT

    def assign(port: int | None) -> int:
        nonlocal nxt
        if port is not None:
            return port
        while nxt in used:
            nxt += 1
        used.add(nxt)
        return nxt

    return [assign(f.port) for f in s.flows], [assign(p.port) for p in s.probes]


def to_flows(s: Scenario) -> list[Flow]:
    ports, _ = _ports(s)
    return [
        _lowered(
            Flow,
            f,
            end=f.stop if f.stop is not None else s.duration,
            port=port,
            objects=Objects(f.objects.count, f.objects.size) if f.objects else None,
            page=Page(f.page.primary, tuple(f.page.secondaries), f.page.framing or "plain") if f.page else None,
            cc_params=dict(f.cc_params or {}),
            rcvbuf=None if f.rcvbuf == "default" else f.rcvbuf,
            tcp_info_interval=f.tcp_info_interval if "tcp_info_interval" in kind(f.protocol).fields else None,
            playout=tuple(f.playout) if f.playout else None,
            seed=derive_seed(s.seed, "flow", f.name),
        )
        for f, port in zip(s.flows, ports)
    ]


def to_probes(s: Scenario) -> list[Probe]:
    _, ports = _ports(s)
    return [
        _lowered(
            Probe,
            p,
            name=p.name or f"probe{i}",
            end=p.until if p.until is not None else s.duration,
            port=port,
        )
        for i, (p, port) in enumerate(zip(s.probes, ports))
    ]


def resolve(s: Scenario) -> Resolved:
    a = s.analysis
    return _lowered(
        Resolved,
        s,
        topology=to_topology(s),
        routers=tuple(s.routers),
        flows=tuple(to_flows(s)),
        probes=tuple(to_probes(s)),
        sysctls={h: {k: str(v) for k, v in kv.items()} for h, kv in s.sysctls.items()},
        analysis=_lowered(Analysis, a, window=(a.window[0], a.window[1]) if a.window else (0.0, s.duration)),
        capture=Capture(
            snaplen=s.capture.snaplen,
            directions=tuple(
                s.capture.directions or [f"{link.name}.{w}" for link in s.links for w in ("forward", "reverse")]
            ),
        )
        if s.capture is not None
        else None,
    )
