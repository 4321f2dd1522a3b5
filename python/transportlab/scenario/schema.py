"""The scenario file's schema: pydantic models, unknown keys forbidden everywhere.

Values are parsed into SI units as they are validated (seconds, bits/s, bytes,
probabilities), so a validated `Scenario` holds no unit strings. Checks that need
several fields of one table live in that table's model; checks across tables (names
that refer to hosts, links, the scenario's duration) live in `checks`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from transportlab import contract
from transportlab.scenario.errors import FieldIssue
from transportlab.scenario.queues import bdp_packets
from transportlab.scenario.traces import TraceError, load_trace
from transportlab.scenario.units import parse_duration, parse_percentage, parse_rate, parse_size

# --- value types -------------------------------------------------------------------


def _positive(parse: Callable[[Any], float], what: str) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        v = parse(value)
        if v <= 0:
            raise ValueError(f"expected a {what} greater than zero")
        return v

    return check


Duration = Annotated[float, BeforeValidator(parse_duration)]
PositiveDuration = Annotated[float, BeforeValidator(_positive(parse_duration, "duration"))]
Rate = Annotated[float, BeforeValidator(parse_rate)]
Size = Annotated[int, BeforeValidator(parse_size)]
PositiveSize = Annotated[int, BeforeValidator(_positive(parse_size, "size"))]
Probability = Annotated[float, BeforeValidator(parse_percentage)]


def _name(pattern: str, what: str) -> Callable[[Any], str]:
    regex = re.compile(pattern)

    def check(value: Any) -> str:
        if not isinstance(value, str) or not regex.fullmatch(value):
            raise ValueError(f"expected {what}")
        return value

    return check


HostName = Annotated[
    str, BeforeValidator(_name(r"[a-z][a-z0-9_]{0,15}", "a node name: a lowercase letter, then up to 15 of a-z 0-9 _"))
]
ItemName = Annotated[
    str, BeforeValidator(_name(r"[a-z][a-z0-9_-]{0,31}", "a name: a lowercase letter, then up to 31 of a-z 0-9 _ -"))
]
ScenarioName = Annotated[
    str, BeforeValidator(_name(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", "a scenario name: up to 64 of A-Z a-z 0-9 _ . -"))
]
SysctlKey = Annotated[
    str, BeforeValidator(_name(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+", "a sysctl name like 'net.core.rmem_max'"))
]
Port = Annotated[int, Field(ge=1, le=65535)]
Count = Annotated[int, Field(ge=1)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


# --- links -------------------------------------------------------------------------


class GilbertElliottSpec(_Table):
    """netem's gemodel: p = P(good→bad), r = P(bad→good); loss 1−h in bad, 1−k in good."""

    p: Probability
    r: Probability
    h: Probability = 0.0
    k: Probability = 1.0


class LossModelSpec(_Table):
    gilbert_elliott: GilbertElliottSpec


def _loss_kind(value: Any) -> str:
    return "~model" if isinstance(value, dict) else "~percentage"


# `loss = "1%"` or `loss = { gilbert_elliott = { p = "1%", r = "10%" } }`. The "~" tags
# are dropped from error paths.
Loss = Annotated[
    Annotated[Probability, Tag("~percentage")] | Annotated[LossModelSpec, Tag("~model")],
    Discriminator(_loss_kind),
]


# Queue disciplines and the engine-config names of their parameters (contracts/). A
# scenario writes a parameter without its unit suffix: `target = "5ms"` for `target_ns`,
# `quantum = "1514B"` for `quantum_bytes`.
DISCIPLINES = contract.queue_disciplines()
_UNIT_SUFFIXES = (("_ns", "duration"), ("_bytes", "size"))


def discipline_parameter(engine_name: str) -> tuple[str, str | None]:
    """(scenario name, unit kind or None) of a discipline parameter's engine name."""
    for suffix, unit in _UNIT_SUFFIXES:
        if engine_name.endswith(suffix):
            return engine_name[: -len(suffix)], unit
    return engine_name, None


class QueueSpec(_Table):
    """Exactly one of `packets`, `bytes`, `bdp` (with an optional `rtt` for `bdp`); the
    discipline (default drop-tail), `ecn` for the AQMs, and the discipline's parameters."""

    packets: Count | None = None
    bytes: Size | None = None
    bdp: Annotated[float, Field(gt=0)] | None = None
    rtt: PositiveDuration | None = None
    discipline: str = "drop_tail"
    ecn: bool = False
    # Parameters of the disciplines (docs/scenarios.md); which ones a discipline takes is
    # checked against the contract below.
    min_th: Annotated[float, Field(ge=0)] | None = None
    max_th: Annotated[float, Field(gt=0)] | None = None
    max_p: Annotated[float, Field(gt=0, le=1)] | None = None
    w_q: Annotated[float, Field(gt=0, le=1)] | None = None
    gentle: bool | None = None
    avpkt: Size | None = None
    target: PositiveDuration | None = None
    interval: PositiveDuration | None = None
    mtu: Size | None = None
    t_update: Annotated[float, BeforeValidator(parse_duration), Field(ge=100e-6)] | None = None
    alpha: Annotated[float, Field(ge=0)] | None = None
    beta: Annotated[float, Field(ge=0)] | None = None
    max_burst: Duration | None = None
    mean_packet: Size | None = None
    mark_ecnth: Annotated[float, Field(ge=0, le=1)] | None = None
    flows: Annotated[int, Field(ge=1, le=65536)] | None = None
    quantum: Size | None = None
    k: Annotated[float, Field(gt=0)] | None = None
    l_threshold: Duration | None = None
    l_range: Duration | None = None
    tshift: Duration | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> QueueSpec:
        kinds = [k for k in ("packets", "bytes", "bdp") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise FieldIssue("a queue is exactly one of {packets = N}, {bytes = SIZE}, {bdp = X}")
        if self.rtt is not None and self.bdp is None:
            raise FieldIssue("rtt only goes with bdp", ("rtt",))
        if self.bytes is not None and self.bytes < 1500:
            raise FieldIssue("a byte queue must hold at least one 1500-byte packet", ("bytes",))
        if self.discipline not in DISCIPLINES:
            raise FieldIssue(f"unknown queue discipline; one of {', '.join(DISCIPLINES)}", ("discipline",))
        d = DISCIPLINES[self.discipline]
        if self.ecn and not d["aqm"]:
            aqms = ", ".join(n for n, q in DISCIPLINES.items() if q["aqm"])
            raise FieldIssue(f"{self.discipline} never drops early, so there is nothing to mark ({aqms} do)", ("ecn",))
        takes = {discipline_parameter(p)[0] for p in d["parameters"]}
        for name in self.discipline_fields():
            if getattr(self, name) is not None and name not in takes:
                theirs = ", ".join(sorted(takes)) or "none"
                raise FieldIssue(f"not a parameter of {self.discipline} (its parameters: {theirs})", (name,))
        if self.min_th is not None and self.max_th is not None and self.max_th <= self.min_th:
            raise FieldIssue("must be above min_th", ("max_th",))
        return self

    @staticmethod
    def discipline_fields() -> list[str]:
        """The scenario names of every discipline's parameters."""
        return sorted({discipline_parameter(p)[0] for q in DISCIPLINES.values() for p in q["parameters"]})

    def engine_discipline(self) -> dict[str, Any]:
        """The discipline, `ecn` and the parameters given, as the engine config writes
        them (empty for plain drop-tail, the engine's default)."""
        if self.discipline == "drop_tail":
            return {}
        out: dict[str, Any] = {"discipline": self.discipline}
        if self.ecn:
            out["ecn"] = True
        for engine_name in DISCIPLINES[self.discipline]["parameters"]:
            name, unit = discipline_parameter(engine_name)
            value = getattr(self, name)
            if value is not None:
                out[engine_name] = int(round(value * 1e9)) if unit == "duration" else value
        return out


class PathSpec(_Table):
    """What one path of a direction does to packets (a plain direction, or one leg)."""

    rate: Rate | None = None
    trace: str | None = None
    delay: Duration = 0.0
    jitter: Duration = 0.0
    distribution: Literal["uniform", "normal", "pareto", "paretonormal"] = "normal"
    reorder: bool = False
    loss: Loss | None = None
    duplicate: Probability = 0.0
    queue: QueueSpec | None = None
    trace_offset: Duration = 0.0

    _trace_ms: tuple[int, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check_path(self, info: ValidationInfo) -> PathSpec:
        if self.rate is not None and self.trace is not None:
            raise FieldIssue("rate and trace exclude each other: a trace is the rate", ("trace",))
        if self.queue is not None and self.rate is None and self.trace is None:
            raise FieldIssue(
                "a queue needs a rate or a trace in the same direction (nothing waits otherwise)", ("queue",)
            )
        if self.trace_offset and self.trace is None:
            raise FieldIssue("trace_offset needs a trace in the same direction", ("trace_offset",))
        if self.queue is not None and self.queue.bdp is not None and self.rate is None:
            raise FieldIssue("a queue in bdp needs a constant rate; with a trace give packets or bytes", ("queue",))
        if self.trace is not None:
            base = (info.context or {}).get("base_dir") if info else None
            path = Path(self.trace)
            if not path.is_absolute() and base is not None:
                path = Path(base) / path
            try:
                self._trace_ms = load_trace(path)
            except TraceError as e:
                raise FieldIssue(str(e), ("trace",)) from None
            self.trace = str(path)
        return self

    @property
    def trace_ms(self) -> tuple[int, ...] | None:
        if self.trace is not None and self._trace_ms is None:
            self._trace_ms = load_trace(self.trace)
        return self._trace_ms


class LegSpec(PathSpec):
    """One leg of a multipath direction (e.g. one radio link of dual connectivity)."""

    name: ItemName

    @model_validator(mode="after")
    def _check_leg(self) -> LegSpec:
        if self.queue is not None and self.queue.bdp is not None and self.queue.rtt is None:
            raise FieldIssue('a leg\'s queue in bdp needs its rtt: {bdp = X, rtt = "40ms"}', ("queue",))
        return self


class SplitSpec(_Table):
    """How the sender side spreads packets over the legs. "batch": of every `batch`
    consecutive packets, the first ratio·batch go on leg 1 and the rest on leg 2 (with
    more legs, `shares` per leg); "duplicate": every packet on every leg."""

    mode: Literal["batch", "duplicate"] = "batch"
    batch: Count | None = None
    ratio: Probability | None = None
    shares: list[Annotated[float, Field(ge=0, le=1)]] | None = None

    @model_validator(mode="after")
    def _check(self) -> SplitSpec:
        if self.mode == "duplicate":
            for k in ("batch", "ratio", "shares"):
                if getattr(self, k) is not None:
                    raise FieldIssue(f'{k} is for mode = "batch"; duplication sends every packet on every leg', (k,))
            return self
        if self.batch is None:
            raise FieldIssue("a batch split needs batch (packets per batch)", ("batch",))
        if (self.ratio is None) == (self.shares is None):
            raise FieldIssue("a batch split needs exactly one of ratio (share on leg 1, two legs) and shares (one per leg)",
                             ("ratio",))  # fmt: skip
        if self.shares is not None and abs(sum(self.shares) - 1.0) > 1e-9:
            raise FieldIssue(f"shares must add up to 1 (they add up to {sum(self.shares):g})", ("shares",))
        return self

    def leg_shares(self, legs: int) -> list[float] | None:
        if self.mode == "duplicate":
            return None
        if self.shares is not None:
            return list(self.shares)
        assert self.ratio is not None  # _check: a batch split has shares or ratio
        return [self.ratio, 1.0 - self.ratio]


class MergeSpec(_Table):
    """The receiving side: PDCP reordering by sequence number with t-Reordering, which
    also discards duplicates; `enabled = false` hands packets over as they arrive."""

    enabled: bool = True
    t_reordering: PositiveDuration = 0.200


class DirectionSpec(PathSpec):
    """One direction of a link. Unset = ideal (no delay, unlimited rate, no loss). With
    `legs` the direction is multipath: `split` spreads packets over the legs, `merge`
    puts them back in order; the parameters are then each leg's."""

    legs: Annotated[list[LegSpec], Field(min_length=2)] | None = None
    split: SplitSpec | None = None
    merge: MergeSpec | None = None
    # Traffic to these hosts rides one leg only, bypassing split and merge (single-leg
    # users sharing a leg with the split traffic): host name → leg name.
    pin: dict[HostName, ItemName] | None = None

    @model_validator(mode="after")
    def _check_legs(self) -> DirectionSpec:
        given = self.model_fields_set
        if self.legs is None:
            for k in ("split", "merge", "pin"):
                if k in given:
                    raise FieldIssue(f"{k} goes with legs (a multipath direction)", (k,))
            return self
        own = [k for k in PathSpec.model_fields if k in given]
        if own:
            raise FieldIssue("a direction with legs takes its parameters per leg; move it into legs", (own[0],))
        if self.split is None:
            raise FieldIssue("a direction with legs needs split, e.g. {batch = 100, ratio = 0.5} or {mode = \"duplicate\"}",
                             ("split",))  # fmt: skip
        shares = self.split.leg_shares(len(self.legs))
        if shares is not None and len(shares) != len(self.legs):
            field = "shares" if self.split.shares is not None else "ratio"
            raise FieldIssue(
                f"{len(self.legs)} legs need {len(self.legs)} shares (ratio is for two legs)", ("split", field)
            )
        names = [leg.name for leg in self.legs]
        if len(set(names)) != len(names):
            raise FieldIssue(f"leg names must differ, got {names}", ("legs",))
        for host, leg in (self.pin or {}).items():
            if leg not in names:
                raise FieldIssue(f"unknown leg (legs: {', '.join(names)})", ("pin", host), leg)
        if self.merge is None:
            self.merge = MergeSpec()
        return self


class LinkSpec(_Table):
    """Joins `between[0]` and `between[1]`; `forward` is 0→1, `reverse` is 1→0."""

    name: ItemName
    between: Annotated[list[HostName], Field(min_length=2, max_length=2)]
    forward: DirectionSpec = Field(default_factory=DirectionSpec)
    reverse: DirectionSpec = Field(default_factory=DirectionSpec)

    @model_validator(mode="after")
    def _check(self) -> LinkSpec:
        if self.between[0] == self.between[1]:
            raise FieldIssue("a link joins two different nodes", ("between",))
        for which in ("forward", "reverse"):
            q = getattr(self, which).queue
            if q is not None and q.bdp is not None and q.rtt is None and self.rtt() <= 0:
                raise FieldIssue(
                    "a queue in bdp needs a round-trip time: this link has no delay; give one, e.g. "
                    'queue = {bdp = 1, rtt = "100ms"}',
                    (which, "queue"),
                )
        return self

    def rtt(self) -> float:
        """This link's own round trip: forward delay + reverse delay (seconds)."""
        return self.forward.delay + self.reverse.delay

    def queue_packets(self, which: Literal["forward", "reverse"]) -> int | None:
        """The queue of one direction in packets when it is given in packets or bdp."""
        d: DirectionSpec = getattr(self, which)
        if d.queue is None:
            return None
        if d.queue.packets is not None:
            return d.queue.packets
        if d.queue.bdp is not None:
            assert d.rate is not None
            rtt = d.queue.rtt if d.queue.rtt is not None else self.rtt()
            return bdp_packets(d.rate, rtt, d.queue.bdp)
        return None


# --- flows and probes --------------------------------------------------------------


class ObjectsSpec(_Table):
    count: Count
    size: PositiveSize


class PageSpec(_Table):
    """tcp web pages, loaded one after another until the flow stops: the primary object,
    then (once the client has it) the secondaries."""

    primary: PositiveSize
    secondaries: Annotated[list[PositiveSize], Field(max_length=1000)] = Field(default_factory=list)
    # "plain": objects back to back; "mstcp": each on an msTCP sub-stream, the
    # secondaries' chunks interleaved. Default: plain when ordered, mstcp when unordered.
    framing: Literal["plain", "mstcp"] | None = None


class FlowSpec(_Table):
    """A transfer between two hosts. `from` is the client that connects, `to` the server;
    direction "upload" sends data client→server, "download" server→client."""

    name: ItemName
    from_: HostName = Field(alias="from")
    to: HostName
    protocol: str  # a flow kind (transportlab.kinds)
    cc: str | None = None
    cc_params: dict[str, bool | int | float | str] | None = None
    direction: Literal["upload", "download"] = "upload"
    start: Duration = 0.0
    # How it ends: at most one of these; none = runs until the scenario's duration.
    stop: PositiveDuration | None = None
    bytes: PositiveSize | None = None
    objects: ObjectsSpec | None = None
    page: PageSpec | None = None
    count: Count | None = None
    # Sending pattern of udp datagrams and of quic messages (constant-rate messages on one
    # stream): `size` and one of `rate` / `interval`; udp only: `burst` per deadline;
    # tcp records: `size` (bytes in the stream, framing included) every `interval`.
    rate: Rate | None = None
    interval: PositiveDuration | None = None
    size: Size | None = None
    burst: Count = 1
    streams: Count = 1
    mss: int | None = None
    tls: bool = False
    # Records (`size` bytes every `interval`): how the receiver gets them. tcp (sent by
    # the server): "ordered" (the socket's stream) or "unordered" (also the arriving
    # segments); quic (sent by the server): "ordered" (one stream read in order),
    # "unordered" (one stream, chunks read unordered) or "streams" (a stream per record);
    # udp (sent by `from`): "unordered" only (one record per datagram).
    delivery: Literal["ordered", "unordered", "streams"] | None = None
    # UDP socket receive buffer of a quic flow's two ends, as the kernel reports it (what
    # net.core.rmem_default would set); "default" = the namespace's rmem_default (so one
    # sweep axis can compare default and enlarged).
    rcvbuf: Literal["default"] | PositiveSize = "default"
    # quic: both ends write their connection's qlog (every packet event as JSON, in the
    # agents' own threads); false leaves it out (the CPU experiment, scenarios/s2/cpu.toml).
    qlog: bool = True
    # quic: false switches the sender's pacer off, so only the congestion window limits
    # it (S1's pacer-off reruns; a stack whose pacer the lab can switch off: aioquic).
    pacing: bool = True
    tcp_info_interval: PositiveDuration = 0.010
    # tcp records as VoIP frames: the jitter buffers (fixed playout delays from each
    # frame's send time) for which frames missing playout and loss bursts are reported.
    playout: list[PositiveDuration] | None = None
    # utp: which real uTP implementation runs the flow (transportlab.utp_agent.parameters);
    # tcp: "linux", the kernel's (so one sweep axis can step from uTP to TCP).
    implementation: str | None = None
    # What the ends speak (docs/stacks.md): "agent", the lab's agents' own protocol (quinn,
    # kernel TCP); "http3" (quic's third-party stacks, set for them); tcp "http1", "https"
    # or "http2", a download served by `http_server` to curl. Real defaults (not None) so a
    # sweep arm can step between them.
    application: str = "agent"
    http_server: str = "nginx"  # tcp HTTP: "nginx" or "hypercorn"
    port: Port | None = None

    @field_validator("protocol")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        from transportlab.kinds import KINDS

        if v not in KINDS:
            raise ValueError(f"not a flow kind transportlab runs; expected one of {', '.join(KINDS)}")
        return v

    @model_validator(mode="after")
    def _check(self) -> FlowSpec:
        from transportlab.kinds import COMMON_FIELDS, KINDS

        kind = KINDS[self.protocol]
        given = {"from" if k == "from_" else k for k in self.model_fields_set}
        for k in sorted(given - COMMON_FIELDS - kind.fields):
            # A field left at its default says nothing (a sweep arm may set tls = false
            # on a quic flow); a value means something only the field's kinds do.
            if getattr(self, k) == type(self).model_fields[k].default:
                continue
            owners = [n for n, other in KINDS.items() if k in other.fields]
            raise FieldIssue(f"{k} is not a field of {kind.name} flows (it is one of {', '.join(owners)} flows)", (k,))
        self.cc = kind.check_cc(self)
        ends = [k for k in ("stop", "bytes", "objects", "count") if getattr(self, k) is not None]
        if len(ends) > 1:
            raise FieldIssue(f"{' and '.join(ends)} exclude each other: give at most one way to end a flow", (ends[1],))
        if self.stop is not None and self.stop <= self.start:
            raise FieldIssue(f"stop must come after start ({self.start:g}s)", ("stop",))
        if self.objects is not None:
            if "direction" in given and self.direction != "download":
                raise FieldIssue('objects are downloaded from the server: direction must be "download"', ("direction",))
            self.direction = "download"
        kind.check(self, given)
        return self


class ProbeSpec(_Table):
    """Timestamped UDP echo probes from `from` to `to` (RTT and one-way delay)."""

    name: ItemName | None = None
    from_: HostName = Field(alias="from")
    to: HostName
    interval: PositiveDuration
    start: Duration = 0.0
    count: Count | None = None
    until: PositiveDuration | None = None
    size: Size = 64
    port: Port | None = None

    @model_validator(mode="after")
    def _check(self) -> ProbeSpec:
        if self.count is not None and self.until is not None:
            raise FieldIssue("count and until exclude each other", ("until",))
        if self.until is not None and self.until <= self.start:
            raise FieldIssue(f"until must come after start ({self.start:g}s)", ("until",))
        if not 16 <= self.size <= 65507:
            raise FieldIssue("a probe payload is 16 to 65507 bytes", ("size",))
        return self


# --- the scenario ------------------------------------------------------------------


class CaptureSpec(_Table):
    """pcapng capture of the packets leaving link directions (`tlab pcap`)."""

    snaplen: Annotated[int, Field(ge=20, le=65535)] = 128
    # "link.forward" / "link.reverse" names; default: every direction of every link.
    directions: list[str] | None = None


class AnalysisSpec(_Table):
    bin: PositiveDuration = 0.100
    window: Annotated[list[Duration], Field(min_length=2, max_length=2)] | None = None
    fairness_delta: Probability | None = None
    fairness_hold: PositiveDuration = 1.0
    bottleneck: ItemName | None = None

    @model_validator(mode="after")
    def _check(self) -> AnalysisSpec:
        if self.window is not None and self.window[0] >= self.window[1]:
            raise FieldIssue("window is [start, end] with start before end", ("window",))
        return self


def _check_sweep(value: Any) -> Any:
    """Shape only (paths are checked against the file by `sweep`): path → non-empty
    array, and `together.<name>` = table of path → arrays of one common length."""
    if not isinstance(value, dict):
        raise FieldIssue("expected a table of field path = [values]", (), value)
    for key, values in value.items():
        if key == "together":
            if not isinstance(values, dict):
                raise FieldIssue("expected a table of groups: [sweep.together.<name>]", (key,), values)
            for group, paths in values.items():
                if not isinstance(paths, dict) or not paths:
                    raise FieldIssue("expected a table of field path = [values]", (key, group), paths)
                lengths = set()
                for path, vs in paths.items():
                    if not isinstance(vs, list) or not vs:
                        raise FieldIssue("expected a non-empty array of values", (key, group, path), vs)
                    lengths.add(len(vs))
                if len(lengths) != 1:
                    raise FieldIssue("the arrays of a group are swept together and need one common length",
                                     (key, group), paths)  # fmt: skip
        elif not isinstance(values, list) or not values:
            raise FieldIssue("expected a non-empty array of values", (key,), values)
    return value


class Scenario(_Table):
    name: ScenarioName
    description: str | None = None
    duration: PositiveDuration
    # "flows-done": a run ends as soon as every flow's client has finished (downloads of
    # a fixed size); `duration` is then the limit. Probes alone never keep a run going.
    stop_when: Literal["duration", "flows-done"] = "duration"
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 1
    repetitions: Count = 1
    hosts: Annotated[list[HostName], Field(min_length=1)]
    routers: list[HostName] = Field(default_factory=list)
    links: list[LinkSpec] = Field(default_factory=list)
    flows: list[FlowSpec] = Field(default_factory=list)
    probes: list[ProbeSpec] = Field(default_factory=list)
    sysctls: dict[HostName, dict[SysctlKey, int | str]] = Field(default_factory=dict)
    sweep: Annotated[dict[str, Any], BeforeValidator(_check_sweep)] = Field(default_factory=dict)
    analysis: AnalysisSpec = Field(default_factory=AnalysisSpec)
    capture: CaptureSpec | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> Scenario:
        from transportlab.scenario.checks import check_scenario

        issues = check_scenario(self)
        if issues:
            (field, problem, value), *more = issues
            raise FieldIssue(problem, field, value, more=more)
        return self

    def link(self, name: str) -> LinkSpec:
        return next(link for link in self.links if link.name == name)
