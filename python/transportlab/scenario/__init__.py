"""Stage 1, scenario: TOML with human units → a validated `Scenario` (SI units), one per
sweep point. The plan stage (`transportlab.plan`) turns a point into a topology, flows
and probes. See docs/scenarios.md.

    scenario = load_scenario("scenarios/s0/e0_queue.toml", ["duration=5s"])
    for point in load_points("scenarios/s0/e0_queue.toml"):
        ...
"""

from transportlab.scenario.errors import FieldIssue, Issue, ScenarioError, format_error
from transportlab.scenario.load import apply_overrides, load_points, load_raw, load_scenario, parse_override, read_toml
from transportlab.scenario.queues import PACKET_BYTES, bdp_packets
from transportlab.scenario.schema import (
    DirectionSpec,
    FlowSpec,
    GilbertElliottSpec,
    LinkSpec,
    ProbeSpec,
    QueueSpec,
    Scenario,
)
from transportlab.scenario.sweep import Axis, Point, axes, expand
from transportlab.scenario.traces import TraceError, load_trace
from transportlab.scenario.units import parse_duration, parse_percentage, parse_rate, parse_size
from transportlab.scenario.validate import validate

__all__ = [
    "Axis", "DirectionSpec", "FieldIssue", "FlowSpec", "GilbertElliottSpec",
    "Issue", "LinkSpec", "PACKET_BYTES", "Point", "ProbeSpec", "QueueSpec",
    "Scenario", "ScenarioError", "TraceError", "apply_overrides", "axes",
    "bdp_packets", "expand", "format_error", "load_points", "load_raw", "load_scenario",
    "load_trace", "parse_duration", "parse_override", "parse_percentage", "parse_rate",
    "parse_size", "read_toml", "validate",
]  # fmt: skip
