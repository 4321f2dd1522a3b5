"""Scenario files: TOML with human units → a validated `Scenario` (SI units) → the
runner's `Topology`, flows and probes. See docs/scenarios.md.

    scenario = load_scenario("scenarios/s0/e0.toml", ["duration=5s"])
    for point in load_points("scenarios/s0/e0.toml"):
        resolved = resolve(point.scenario)
"""

from .errors import FieldIssue, Issue, ScenarioError, format_error
from .flows import Analysis, Flow, Objects, Probe, Resolved
from .load import apply_overrides, load_points, load_raw, load_scenario, parse_override, read_toml
from .queues import PACKET_BYTES, bdp_packets
from .schema import (
    DirectionSpec,
    FlowSpec,
    GilbertElliottSpec,
    LinkSpec,
    ProbeSpec,
    QueueSpec,
    Scenario,
)
from .sweep import Axis, Point, axes, expand
from .to_topology import resolve, to_flows, to_probes, to_topology
from .traces import TraceError, load_trace
from .units import parse_duration, parse_percentage, parse_rate, parse_size
from .validate import validate

__all__ = [
    "Analysis", "Axis", "DirectionSpec", "FieldIssue", "Flow", "FlowSpec", "GilbertElliottSpec",
    "Issue", "LinkSpec", "Objects", "PACKET_BYTES", "Point", "Probe", "ProbeSpec", "QueueSpec",
    "Resolved", "Scenario", "ScenarioError", "TraceError", "apply_overrides", "axes",
    "bdp_packets", "expand", "format_error", "load_points", "load_raw", "load_scenario",
    "load_trace", "parse_duration", "parse_override", "parse_percentage", "parse_rate",
    "parse_size", "read_toml", "resolve", "to_flows", "to_probes", "to_topology", "validate",
]  # fmt: skip
