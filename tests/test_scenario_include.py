"""`include` in scenario files: a base file whose keys the including file overrides,
`[set]` for values inside the base's lists, errors naming both files."""

from __future__ import annotations

from pathlib import Path

import pytest

from transportlab.locations import PROJECT_ROOT
from transportlab.scenario import ScenarioError, load_points, load_scenario

BASE = """
duration = "20s"
hosts = ["client", "server"]
repetitions = 3

[[links]]
name = "bottleneck"
between = ["client", "server"]
forward = { rate = "10Mbit", delay = "50ms", queue = { packets = 100 } }
reverse = { delay = "50ms" }

[[flows]]
name = "bulk"
from = "client"
to = "server"
protocol = "tcp"

[sysctls.client]
"net.ipv4.tcp_rmem" = "4096 131072 6291456"

[sweep.together.arm]
"flows.bulk.cc" = ["reno", "cubic"]
labels = ["reno", "cubic"]
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def on_base(folder: Path, text: str, base: str = BASE) -> Path:
    """run.toml named "t", built on base.toml, with `text` after those two keys."""
    write(folder, "base.toml", base)
    return write(folder, "run.toml", f'include = "base.toml"\nname = "t"\n{text}')


def test_keys_override_tables_merge_and_other_values_replace(tmp_path):
    f = on_base(
        tmp_path,
        """
duration = "5s"
hosts = ["client", "server"]
[sysctls.server]
"net.ipv4.tcp_wmem" = "4096 16384 4194304"
[sweep.together.rate]
"links.bottleneck.forward.rate" = ["1Mbit", "2Mbit"]
""",
    )
    s = load_scenario(f)
    assert (s.name, s.duration, s.repetitions) == ("t", 5.0, 3)
    assert set(s.sysctls) == {"client", "server"}  # [sysctls] merged key by key
    points = load_points(f)
    # The base's sweep axis first, then the file's: 2 × 2 points.
    assert [p.label for p in points] == ["arm=reno,rate=1Mbit", "arm=reno,rate=2Mbit",
                                         "arm=cubic,rate=1Mbit", "arm=cubic,rate=2Mbit"]  # fmt: skip


def test_an_array_of_tables_is_replaced_whole(tmp_path):
    f = on_base(
        tmp_path,
        """
[[flows]]
name = "other"
from = "server"
to = "client"
protocol = "tcp"
[set]
sweep = {}
""",
    )
    assert [fl.name for fl in load_scenario(f).flows] == ["other"]


def test_set_changes_one_value_inside_a_base_list(tmp_path):
    f = on_base(
        tmp_path,
        """
[set]
"links.bottleneck.forward.delay" = "5ms"
"links.bottleneck.reverse.delay" = "1ms"
""",
    )
    s = load_scenario(f)
    fwd = s.links[0].forward
    assert (fwd.delay, fwd.rate, s.links[0].reverse.delay) == (0.005, 10e6, 0.001)


def test_bases_chain(tmp_path):
    write(tmp_path, "common/base.toml", BASE)
    write(tmp_path, "common/mid.toml", 'include = "base.toml"\nrepetitions = 7\n')
    f = write(tmp_path, "run.toml", 'include = "common/mid.toml"\nname = "t"\n')
    s = load_scenario(f)
    assert (s.repetitions, s.duration) == (7, 20.0)


def test_missing_base_names_both_files(tmp_path):
    f = write(tmp_path, "run.toml", 'include = "nope.toml"\nname = "t"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    msg = str(info.value)
    assert msg.startswith(f"{f}: include: cannot read the base file {tmp_path / 'nope.toml'}"), msg


def test_bad_toml_in_the_base_names_it_and_the_including_file(tmp_path):
    base = write(tmp_path, "base.toml", "duration = \n")
    f = write(tmp_path, "run.toml", 'include = "base.toml"\nname = "t"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    msg = str(info.value)
    assert msg.startswith(f"{base}: line 1, column ") and "invalid TOML" in msg, msg
    assert msg.endswith(f"(included by {f})"), msg


def test_a_bad_value_from_the_base_names_both_files(tmp_path):
    base = write(tmp_path, "base.toml", BASE.replace('rate = "10Mbit"', 'rate = "fast"'))
    f = write(tmp_path, "run.toml", 'include = "base.toml"\nname = "t"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    msg = str(info.value)
    assert msg.startswith(f"{f}: links.bottleneck.forward.rate: ") and f"(from {base})" in msg, msg
    assert "'fast'" in msg


def test_a_bad_value_set_by_set_says_so(tmp_path):
    f = on_base(tmp_path, '[set]\n"flows.bulk.cc" = "westwood"\n')
    with pytest.raises(ScenarioError, match=r'flows\.bulk\.cc: .*\(set by \[set\] "flows\.bulk\.cc" = \'westwood\'\)'):
        load_scenario(f, ["sweep={}"])


def test_set_naming_no_field_is_an_error_at_that_key(tmp_path):
    f = on_base(tmp_path, '[set]\n"flows.nope.cc" = "reno"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    assert str(info.value).startswith(f'{f}: set."flows.nope.cc": '), str(info.value)


@pytest.mark.parametrize("text, problem", [
    ('include = 3\nname = "t"\n', "include: expected the base file's name"),
    ('name = "t"\n[set]\n"duration" = "5s"\n', "set: set changes values of an included file; it goes with include"),
    ('include = "run.toml"\nname = "t"\n', "include: the files include each other"),
])  # fmt: skip
def test_include_mistakes(tmp_path, text, problem):
    f = write(tmp_path, "run.toml", text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    assert str(info.value).startswith(f"{f}: {problem}"), str(info.value)


def test_a_cycle_through_a_base_is_refused(tmp_path):
    write(tmp_path, "a.toml", 'include = "b.toml"\n')
    write(tmp_path, "b.toml", 'include = "a.toml"\n')
    with pytest.raises(ScenarioError, match="the files include each other"):
        load_scenario(tmp_path / "a.toml")


def test_the_s1_files_are_built_on_their_bases():
    s1 = PROJECT_ROOT / "scenarios" / "s1"
    # The single-connectivity baselines have a topology of their own (no legs); study.toml
    # is no scenario; the LTE-trace, pacer-off and ngtcp2-appendix files are built on the
    # sweeps they repeat.
    files = sorted(
        p for p in s1.rglob("*.toml") if p.name not in ("base.toml", "study.toml", "single_connectivity.toml")
    )
    assert len(files) == 43  # and stacks.toml (docs/stacks.md)
    for f in files:
        folder = f.parent.relative_to(s1).as_posix()
        again = f"../{f.name}"
        base = {"lte": again, "pacer_off": again, "ngtcp2": again, "ngtcp2/fairness": f"../../fairness/{f.name}"}.get(
            folder, "base.toml"
        )
        assert f'include = "{base}"' in f.read_text(), f
        assert load_scenario(f).repetitions == 10
    dup = load_scenario(s1 / "fairness" / "duplication_loss.toml")
    assert dup.links[3].forward.split.mode == "duplicate"
    assert load_scenario(s1 / "delay_ratio_200ms.toml").links[0].forward.legs[1].delay == 0.100


def test_a_base_gives_its_trace_paths_relative_to_its_own_folder(tmp_path):
    trace = write(tmp_path, "common/link.trace", "1\n2\n3\n4\n")
    write(
        tmp_path,
        "common/base.toml",
        BASE.replace(
            'forward = { rate = "10Mbit", delay = "50ms", queue = { packets = 100 } }',
            'forward = { trace = "link.trace" }',
        )
        + '\n[sweep]\n"links.bottleneck.reverse.trace" = ["link.trace"]\n',
    )
    write(
        tmp_path, "common/mid.toml", 'include = "base.toml"\n[set]\n"links.bottleneck.forward.trace" = "link.trace"\n'
    )
    f = write(tmp_path, "elsewhere/run.toml", 'include = "../common/mid.toml"\nname = "t"\n')
    s = load_scenario(f)
    assert Path(s.links[0].forward.trace).resolve() == trace.resolve()
    (point,) = {p.label: p for p in load_points(f) if "reno" in p.label}.values()
    assert Path(point.scenario.links[0].reverse.trace).resolve() == trace.resolve()
