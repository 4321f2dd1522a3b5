"""study.toml read and checked, a design's point selection, and the interval the study
report prints — no network needed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from scenario_text import flow, link, scenario, table
from tlab_cli import tlab
from transportlab.pipeline import DONE
from transportlab.scenario import ScenarioError, load_points
from transportlab.study import Design, load_study
from transportlab.study.report import ci95, fmt_ci
from transportlab.study.run import plan_study, thinned
from transportlab.study.status import status_table

SCENARIO = scenario(
    "tiny",
    link({"rate": "10Mbit", "delay": "5ms", "queue": {"packets": 50}}),
    flow("tcp", cc="cubic"),
    table(
        "sweep",
        {
            "links.bottleneck.forward.delay": ["1ms", "2ms", "3ms", "4ms", "5ms", "6ms"],
            "flows.bulk.cc": ["reno", "cubic", "bbr"],
        },
    ),
    duration="2s",
    seed=1,
    repetitions=4,
)

STUDY = """
name = "tiny"
title = "A tiny study"
description = "for the tests"
default_design = "machine"

[designs.full]
[designs.machine]
repetitions = 2
thin = 2

[[experiments]]
name = "one"
file = "tiny.toml"
title = "the tiny scenario"

[[figures]]
id = "delay"
title = "throughput against delay"
kind = "lines"
experiments = ["one"]
metrics = ["throughput_bps"]
x = "delay"
by = ["cc"]
measured = "throughput"
"""


def _study(tmp_path: Path, text: str = STUDY) -> Path:
    (tmp_path / "tiny.toml").write_text(SCENARIO)
    (tmp_path / "study.toml").write_text(text)
    return tmp_path


def test_design_picks_repetitions_and_thins_sweeps_not_arms(tmp_path):
    study = load_study(_study(tmp_path))
    (full,) = plan_study(study, tmp_path / "out", "full")
    (machine,) = plan_study(study, tmp_path / "out", "machine")
    assert len(full.runs) == 6 * 3 * 4  # the file's own repetitions
    # delay (6 steps): 1, 3, 5 ms and the last, 6 ms; cc (3 steps, an arm axis) all kept
    assert {r.point_axes["delay"] for r in machine.runs} == {"1ms", "3ms", "5ms", "6ms"}
    assert {r.point_axes["cc"] for r in machine.runs} == {"reno", "cubic", "bbr"}
    assert len(machine.runs) == 4 * 3 * 2
    # The same point and repetition is the same run folder in every design (resumable).
    assert {r.run_dir for r in machine.runs} <= {r.run_dir for r in full.runs}


def test_design_points_must_exist(tmp_path):
    points = load_points(_study(tmp_path) / "tiny.toml")
    keep = thinned(Design(points=["delay=2ms,cc=bbr"]), "tiny.toml")(points)
    assert [p.label for p in keep] == ["delay=2ms,cc=bbr"]
    with pytest.raises(ScenarioError, match="names sweep point 'delay=9ms,cc=bbr'"):
        thinned(Design(points=["delay=9ms,cc=bbr"]), "tiny.toml")(points)


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        (STUDY.replace('kind = "lines"', 'kind = "pie"'), "figures[0].kind", "pie"),
        (STUDY.replace('file = "tiny.toml"', 'file = "nope.toml"'), "experiments[0].file", "nope.toml"),
        (STUDY.replace('default_design = "machine"', 'default_design = "huge"'), "", "huge"),
        (STUDY.replace('x = "delay"\n', ""), "figures[0]", "needs x"),
        (STUDY.replace("thin = 2", "thin = 0"), "designs.machine.thin", "0"),
        (STUDY + "\ncolour = 1\n", "colour", "colour"),
    ],
)
def test_bad_study_file_names_file_field_and_value(tmp_path, text, field, message):
    with pytest.raises(ScenarioError) as e:
        load_study(_study(tmp_path, text))
    line = str(e.value)
    assert line.startswith(str(tmp_path / "study.toml")) and field in line and message in line


def test_cli_refuses_bad_study_and_design_without_traceback(tmp_path):
    folder = _study(tmp_path)
    for args, expect in (
        ([str(tmp_path / "missing")], "no study.toml here"),
        ([str(folder), "--design", "huge"], "no design 'huge'"),
        ([str(folder), "--experiment", "two"], "no experiment 'two'"),
    ):
        res = tlab("study", *args, "--out", tmp_path / "out", timeout=60)
        assert res.returncode == 2 and expect in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "out").exists()


def test_simulate_one_experiment_names_only_its_own_refusals(tmp_path):
    """`--simulate --experiment one`: the bbr points (a kernel control) are refused naming
    experiment one; experiment two, not asked for, is not listed (the report says it)."""
    two = STUDY.replace(
        "[[figures]]", '[[experiments]]\nname = "two"\nfile = "tiny.toml"\ntitle = "again"\n\n[[figures]]'
    )
    folder = _study(tmp_path, two)
    res = tlab("study", folder, "--simulate", "--experiment", "one", "--quiet", "--out", tmp_path / "out", timeout=300)
    assert res.returncode == 0, res.stderr
    said = [line for line in res.stderr.splitlines() if line.startswith("one: not in the simulator: flows.bulk.cc: ")]
    assert (
        len(said) == 1
        and said[0].endswith("(4 points: delay=1ms,cc=bbr, delay=3ms,cc=bbr, delay=5ms,cc=bbr, …)")
        and "two:" not in res.stderr
    ), res.stderr


def test_status_counts_what_is_done_and_names_the_next_run(tmp_path):
    """24 runs planned at `machine` (4 delays × 3 controls × 2 repetitions); 5 marked done
    by hand, the first point's two among them: 19 left, and the next run is the first
    point's neighbour. The command prints the same and creates nothing."""
    folder = _study(tmp_path)
    out = tmp_path / "out"
    (plan,) = plan_study(load_study(folder), out, "machine")
    for r in plan.runs[:2] + plan.runs[3:6]:
        r.run_dir.mkdir(parents=True)
        (r.run_dir / DONE).touch()
    table = status_table([plan])
    assert table.splitlines()[1].split() == ["one", "tiny.toml", "12", "24", "5", "19"]
    assert table.splitlines()[2].split() == ["total", "12", "24", "5", "19"]
    assert f"next: one {plan.runs[2].label}" in table
    res = tlab("study", folder, "--status", "--out", out, timeout=60)
    assert res.returncode == 0 and table in res.stdout, res.stdout + res.stderr
    fresh = tlab("study", folder, "--status", "--out", tmp_path / "other", timeout=60)
    rows = [line.split() for line in fresh.stdout.splitlines()]
    assert ["one", "tiny.toml", "12", "24", "0", "24"] in rows and not (tmp_path / "other").exists()


def test_interval_by_hand():
    # 1, 2, 3: mean 2, s = 1, t(0.975, 2) = 4.303 → half-width 4.303 / √3 = 2.4843
    m, h, n = ci95([1.0, 2.0, 3.0])
    assert (m, n) == (2.0, 3) and h == pytest.approx(4.303 / math.sqrt(3), abs=1e-4)
    assert fmt_ci([1.0, 2.0, 3.0]) == "2.00 ± 2.48 (n=3)"
    assert fmt_ci([5e6], 1e-6) == "5.00 (n=1)" and fmt_ci([]) == "—"
    assert math.isnan(ci95([7.0])[1])


def test_simulator_refusals_are_listed_once_per_reason():
    """A reason that refuses many points is said once, with how many and the first three."""
    from transportlab.study.run import refused_points

    refused = {f"arm=b,n={i}": [("flows.dl.rcvbuf", "no socket")] for i in range(5)}
    refused |= {"arm=a,n=0": [], "arm=c,n=0": [("flows.dl.cc", "kernel only"), ("flows.dl.rcvbuf", "no socket")]}
    assert refused_points(refused) == (
        "flows.dl.cc: kernel only (1 point: arm=c,n=0); "
        "flows.dl.rcvbuf: no socket (6 points: arm=b,n=0, arm=b,n=1, arm=b,n=2, …)"
    )
