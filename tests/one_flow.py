"""The one-flow scenario (hosts client and server, one link "path", one flow) the
workload tests of the Python side write (tests/test_records.py, test_web.py,
test_workloads.py) and end-to-end tests run (tests/test_quic_e2e.py, test_utp_e2e.py,
test_run_e2e.py, test_web_e2e.py, records_run.py), and their check that a bad field is
refused naming the file, the field and the value."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import scenario_text as st
from transportlab.scenario import ScenarioError, load_scenario


def one_flow_scenario(
    flow: str,
    *,
    name: str,
    forward: str,
    reverse: str,
    protocol: str = "tcp",
    duration: str = "10s",
    settings: str = "",
) -> str:
    """The scenario text; `forward` / `reverse` are the link directions' inline tables'
    contents, `flow` the flow's extra lines, `settings` extra top-level lines (e.g.
    `stop_when`, `seed`)."""
    path = st.link(st.Raw(f"{{ {forward} }}"), st.Raw(f"{{ {reverse} }}"), name="path")
    return st.scenario("t", settings + "\n", path, st.flow(protocol, name=name, extra=flow), duration=duration)


def download_until_done(flow: str, *, protocol: str, link: str, duration: str, seed: int) -> str:
    """One download "dl" (the flow's lines `flow`) over `link` both ways; the run ends
    when the flow is done (`duration` only bounds a broken transfer)."""
    return one_flow_scenario(
        flow,
        name="dl",
        protocol=protocol,
        forward=link,
        reverse=link,
        duration=duration,
        settings=f'stop_when = "flows-done"\nseed = {seed}',
    )


def load_one_flow(path: Path, flow: str, **scenario):
    """Writes the scenario (`one_flow_scenario`'s keywords) to `path` and loads it."""
    path.write_text(one_flow_scenario(flow, **scenario))
    return load_scenario(path, [])


def assert_refused(load: Callable[[], object], field: str, value: str, file: Path | None = None) -> None:
    """`load()` raises a ScenarioError naming `field` (its dotted path) and `value`, and
    `file` when given."""
    with pytest.raises(ScenarioError) as info:
        load()
    msg = str(info.value)
    if file is not None:
        assert str(file) in msg, msg
    assert f": {field}" in msg, msg
    assert value in msg, msg
