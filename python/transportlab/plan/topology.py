"""The emulated network as data: hosts, links with a parameter set per direction, and
the static routing computed from them. Pure: no system calls here (see `network`)."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from transportlab.plan.units import to_ns
from transportlab.scenario import graph

# RFC 2544's benchmarking range: never routed on the Internet, meant for test networks.
ADDRESS_BASE = ipaddress.IPv4Address("198.18.0.0")

Distribution = Literal["uniform", "normal", "pareto", "paretonormal"]


@dataclass(frozen=True)
class GilbertElliott:
    """netem's gemodel: p = P(good→bad), r = P(bad→good); a packet is lost with
    probability 1−h in the bad state and 1−k in the good state."""

    p: float
    r: float
    h: float = 0.0
    k: float = 1.0


@dataclass(frozen=True)
class Direction:
    """One direction of a link, in SI units (seconds, bits/s, bytes). Unset = ideal."""

    rate: float | None = None
    trace_ms: tuple[int, ...] | None = None
    # Where in the trace the scenario's time 0 falls (s).
    trace_offset: float = 0.0
    queue_packets: int | None = None
    queue_bytes: int | None = None
    # The queue's discipline, `ecn` and parameters in the engine's names (empty: drop-tail).
    queue_discipline: tuple[tuple[str, Any], ...] = ()
    delay: float = 0.0
    jitter: float = 0.0
    distribution: Distribution = "normal"
    reorder: bool = False
    loss: float = 0.0
    gilbert_elliott: GilbertElliott | None = None
    duplicate: float = 0.0
    multipath: Multipath | None = None

    @property
    def path_rate(self) -> float | None:
        return self.multipath.capacity() if self.multipath else self.rate

    @property
    def path_delay(self) -> float:
        return self.multipath.delay() if self.multipath else self.delay

    def engine_spec(self) -> dict:
        """The linkem direction spec (plain `DirectionSpec`, or `MultipathSpec` when the
        direction has legs) as the engine's JSON config expects it."""
        if self.multipath is not None:
            return self.multipath.engine_spec()
        rate: dict | None
        if self.trace_ms is not None:
            rate = {
                "trace": {"opportunities_ms": list(self.trace_ms), "offset_ns": int(round(self.trace_offset * 1e9))}
            }
        elif self.rate is not None:
            rate = {"constant": {"bits_per_sec": int(round(self.rate))}}
        else:
            rate = None
        if self.queue_packets is not None:
            queue: object = {"packets": self.queue_packets}
        elif self.queue_bytes is not None:
            queue = {"bytes": self.queue_bytes}
        else:
            queue = "unlimited"
        if self.queue_discipline:
            assert isinstance(queue, dict)  # the schema gives every discipline a limit
            queue = {**queue, **dict(self.queue_discipline)}
        if self.gilbert_elliott is not None:
            ge = self.gilbert_elliott
            loss = {"gilbert_elliott": {"p": ge.p, "r": ge.r, "h": ge.h, "k": ge.k}}
        elif self.loss > 0:
            loss = {"bernoulli": {"p": self.loss}}
        else:
            loss = None
        jitter = None
        if self.jitter > 0:
            jitter = {"amount": to_ns(self.jitter), "distribution": self.distribution, "reorder": self.reorder}
        return {
            "rate": rate,
            "queue": queue,
            "delay": to_ns(self.delay),
            "jitter": jitter,
            "loss": loss,
            "duplicate": self.duplicate,
        }


@dataclass(frozen=True)
class Multipath:
    """A direction spread over legs: the split numbers packets (inside the engine) and
    sends each batch's shares on the legs (`shares`; None = duplicate every packet on
    every leg); the merge reorders by sequence number with t-Reordering (PDCP)."""

    legs: tuple[tuple[str, Direction], ...]  # (leg name, its parameters)
    shares: tuple[float, ...] | None
    batch: int | None
    merge: bool = True
    t_reordering: float = 0.200
    pin: tuple[tuple[str, str], ...] = ()  # (destination host, leg name): that leg only

    def pinned_leg(self, dst: str) -> int | None:
        names = [name for name, _ in self.legs]
        return next((names.index(leg) for host, leg in self.pin if host == dst), None)

    def capacity(self) -> float | None:
        """Bits/s the legs carry together (duplication: the slowest leg's), None if any
        leg is unlimited."""
        rates = [d.rate for _, d in self.legs if d.rate is not None]
        if len(rates) < len(self.legs):
            return None
        return min(rates) if self.shares is None else sum(rates)

    def delay(self) -> float:
        return max(d.delay for _, d in self.legs)

    def engine_spec(self) -> dict:
        if self.shares is None:
            split: dict = {"mode": "duplicate"}
        else:
            split = {"mode": "batch", "batch": self.batch, "ratio": list(self.shares)}
        return {
            "legs": [d.engine_spec() for _, d in self.legs],
            "split": split,
            "merge": {"enabled": self.merge, "t_reordering_ns": to_ns(self.t_reordering)},
        }


@dataclass(frozen=True)
class Link:
    """Joins nodes `a` and `b`; `forward` is a→b, `reverse` is b→a."""

    name: str
    a: str
    b: str
    forward: Direction = field(default_factory=Direction)
    reverse: Direction = field(default_factory=Direction)


@dataclass(frozen=True)
class Route:
    src: str
    dst: str
    directions: tuple[int, ...]  # indices into Topology.directions()


class TopologyError(ValueError):
    pass


@dataclass(frozen=True)
class Topology:
    """Hosts are network namespaces; any other node named by a link is a router that
    exists only inside the engine."""

    hosts: tuple[str, ...]
    links: tuple[Link, ...]

    def __post_init__(self) -> None:
        if len(set(self.hosts)) != len(self.hosts):
            raise TopologyError(f"hosts: duplicate names in {list(self.hosts)}")
        names = [link.name for link in self.links]
        if len(set(names)) != len(names):
            raise TopologyError(f"links: duplicate names in {names}")
        for link in self.links:
            if link.a == link.b:
                raise TopologyError(
                    f"links.{link.name}.between: a link joins two different nodes, got {link.a!r} twice"
                )
        attached = {n for link in self.links for n in (link.a, link.b)}
        for h in self.hosts:
            if h not in attached:
                raise TopologyError(f"hosts: {h!r} is not attached to any link")

    def directions(self) -> list[tuple[str, Direction]]:
        """All link directions in engine order: link i forward is 2i, reverse 2i+1."""
        out = []
        for link in self.links:
            out.append((f"{link.name}.forward", link.forward))
            out.append((f"{link.name}.reverse", link.reverse))
        return out

    def address(self, host: str) -> str:
        return str(ADDRESS_BASE + 1 + self.hosts.index(host))

    def route(self, src: str, dst: str) -> Route:
        """Fewest-hops path (`scenario.graph.route`)."""
        try:
            path = graph.route(self.hosts, [(link.a, link.b) for link in self.links], src, dst)
        except graph.NoPath as e:
            raise TopologyError(str(e)) from None
        return Route(src, dst, tuple(path))

    def connected(self, src: str, dst: str) -> bool:
        try:
            self.route(src, dst)
        except TopologyError:
            return False
        return True

    def routes(self) -> list[Route]:
        """Routes between every pair of hosts that has a path (separate networks may
        share one engine; a packet to an unreachable host is dropped as `no_route`)."""
        return [self.route(s, d) for s in self.hosts for d in self.hosts if s != d and self.connected(s, d)]

    def engine_config(self, attach: Mapping[str, int | dict], seed: int, log_path: str, stats_path: str) -> dict:
        """The engine's JSON configuration (crates/engine/src/config.rs). `attach` per
        host: a TUN descriptor, or the engine's `{"kind": "veth", ...}` attachment."""

        def host_attach(a: int | dict) -> dict:
            return {"kind": "tun", "fd": a} if isinstance(a, int) else a

        return {
            "log_path": log_path,
            "stats_path": stats_path,
            "hosts": [{"name": h, "attach": host_attach(attach[h])} for h in self.hosts],
            "directions": [self._direction_config(name, d, seed) for name, d in self.directions()],
            "routes": [self._route_config(r) for r in self.routes()],
        }

    def _route_config(self, r: Route) -> dict:
        out = {
            "ingress": self.hosts.index(r.src),
            "dst": self.address(r.dst),
            "directions": list(r.directions),
            "egress": self.hosts.index(r.dst),
        }
        dirs = self.directions()
        legs = [mp.pinned_leg(r.dst) if (mp := dirs[i][1].multipath) else None for i in r.directions]
        if any(k is not None for k in legs):
            out["legs"] = legs  # per hop: ride only this leg of a multipath direction
        return out

    @staticmethod
    def _direction_config(name: str, d: Direction, seed: int) -> dict:
        from transportlab.plan.seeds import derive_seed

        out = {"name": name, "seed": derive_seed(seed, name), "spec": d.engine_spec()}
        if d.multipath is not None:
            out["leg_names"] = [f"{name}.{leg}" for leg, _ in d.multipath.legs]
        return out

    def legs(self) -> list[tuple[str, Direction]]:
        """The legs of multipath directions as the engine numbers them: after all
        directions, in direction order (log index = len(directions()) + position)."""
        return [(f"{name}.{leg}", p) for name, d in self.directions() if d.multipath for leg, p in d.multipath.legs]

    def path_rtt(self, src: str, dst: str) -> float:
        """Sum of fixed delays there and back (seconds)."""
        dirs = self.directions()
        there = self.route(src, dst).directions
        back = self.route(dst, src).directions
        return sum(dirs[i][1].path_delay for i in there + back)

    def delivery_bound_s(self, src: str, dst: str) -> float:
        """The longest a packet sent now from src can take to reach dst: each direction's
        delay, four times its jitter, and the time its rate takes to send a full queue
        (an unlimited queue behind a rate, or any queue behind a trace, has no bound:
        `math.inf`)."""
        total = 0.0
        for i in self.route(src, dst).directions:
            d = self.directions()[i][1]
            total += d.path_delay + 4 * d.jitter
            rate = d.path_rate
            if d.trace_ms is not None:  # a trace's queue drains at the trace's pace
                return math.inf
            if rate:
                if d.queue_bytes is not None:
                    total += d.queue_bytes * 8 / rate
                elif d.queue_packets is not None:
                    total += d.queue_packets * 1500 * 8 / rate
                else:
                    return math.inf
        return total

    def path_rate(self, src: str, dst: str) -> float | None:
        """The lowest constant rate on the way from src to dst (None: unlimited)."""
        dirs = self.directions()
        rates = [rate for i in self.route(src, dst).directions if (rate := dirs[i][1].path_rate)]
        return min(rates) if rates else None
