"""The web workload on the Python side (tcp flows with `page`): scenario fields and their
errors, the agent command line, and page time / time to first byte on a hand-made
per-object series whose answers are worked out in the comments."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from one_flow import assert_refused, load_one_flow
from transportlab import metrics as M
from transportlab.kinds.base import Files
from transportlab.kinds.tcp import Tcp
from transportlab.plan.resolve import to_flows

MS = 1_000_000
PAGE = 'page = { primary = "30KB", secondaries = ["10KB", "12KB"] }'


def load(tmp_path: Path, flow: str):
    p = tmp_path / "s.toml"
    link = 'rate = "1.5Mbit", delay = "30ms"'
    return p, load_one_flow(p, flow, name="web", forward=link, reverse=link + ', loss = "1%"')


@pytest.mark.parametrize(
    "delivery, framing, expect",
    [("", "", "plain"), ('delivery = "unordered"', "", "mstcp"), ("", 'framing = "mstcp"', "mstcp")],
)
def test_page_flow_runs_the_agent_with_the_page(tmp_path, delivery, framing, expect):
    page = PAGE.replace(" }", f", {framing} }}") if framing else PAGE
    _, s = load(tmp_path, f"{page}\n{delivery}")
    (flow,) = to_flows(s)
    assert flow.direction == "download" and flow.page is not None and flow.page.framing == expect
    text = " ".join(Tcp().endpoints(flow, "10.0.0.2", Files.of(tmp_path / "raw", "web"), 12.0).client)
    assert "--page-primary 30000 --page-secondaries 10000,12000" in text
    assert f"--page-framing {expect}" in text
    assert f"--delivery {flow.delivery}" in text and "--duration 10000000000ns" in text
    assert f"--page-series {tmp_path / 'raw' / 'web-client-page.arrow'}" in text


BAD = [
    (f'{PAGE}\nsize = 100', "flows.web.size", "size does not apply"),
    (f'{PAGE}\ndelivery = "streams"', "flows.web.delivery", "'streams'"),
    (PAGE.replace(" }", ', framing = "plain" }') + '\ndelivery = "unordered"', "flows.web.page.framing", "'plain'"),
    (f'{PAGE}\ndelivery = "unordered"\ntls = true', "flows.web.delivery", "TLS"),
    ('page = { primary = "30KB", secondaries = ["0B"] }', "flows.web.page.secondaries", "0"),
]  # fmt: skip


@pytest.mark.parametrize("flow, path, value", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_page_fields_name_file_field_and_value(tmp_path, flow, path, value):
    assert_refused(lambda: load(tmp_path, flow), path, value, tmp_path / "s.toml")


def test_page_time_and_ttfb_on_a_hand_made_series():
    # Page 0: asked at 0, primary's first byte at 40 ms, complete 100; secondaries asked at
    # 100, first bytes at 150 / 170, complete at 300 / 420: page time 420 ms.
    # Page 1: asked at 420, primary first byte at 470, never completed (page_end null).
    rows = [
        (0, 0, 0, 40, 100, 0, 420),
        (0, 1, 100, 150, 300, 0, 420),
        (0, 2, 100, 170, 420, 0, 420),
        (1, 0, 420, 470, None, 420, None),
    ]
    s = pd.DataFrame(
        [
            {
                "page": p,
                "object": o,
                "request_ns": r * MS,
                "first_byte_ns": f * MS,
                "complete_ns": None if c is None else c * MS,
                "page_start_ns": ps * MS,
                "page_end_ns": None if pe is None else pe * MS,
            }
            for p, o, r, f, c, ps, pe in rows
        ]
    )
    assert list(M.page_times(s) / MS) == [420]
    # TTFB: 40, 50, 70 and 50 ms (the unfinished page's primary counts: it got a byte).
    assert sorted(M.object_ttfb(s) / MS) == [40, 50, 50, 70]
    st = M.ms_stats(M.object_ttfb(s))
    assert st is not None and st["p50"] == 50 and st["max"] == 70
    assert M.ms_stats(np.zeros(0)) is None


def test_the_simulator_refuses_pages_naming_the_field(tmp_path):
    from transportlab.plan.resolve import resolve
    from transportlab.run.simulate import refusals

    _, s = load(tmp_path, PAGE)
    assert [r[0] for r in refusals(resolve(s))] == ["flows.web.page"]
