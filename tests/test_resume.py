"""An interrupted sweep resumes: finished runs (with their DONE marker) are kept and
skipped, unfinished ones are run; seeds are derived per point and repetition."""

import shutil

import pytest

from scenario_text import flow, link, scenario, table
from transportlab import pipeline as runner
from transportlab.plan.runs import plan
from transportlab.run.execute import AgentFailure

SCENARIO = scenario(
    "resume",
    link({"rate": "10Mbit"}, name="l", between=("a", "b")),
    flow("tcp", name="f", src="a", dst="b"),
    table("sweep", {"links.l.forward.rate": ["5Mbit", "10Mbit"]}),
    duration="2s",
    repetitions=2,
    hosts=["a", "b"],
)


def test_interrupted_sweep_runs_only_what_is_missing(tmp_path, monkeypatch):
    path = tmp_path / "resume.toml"
    path.write_text(SCENARIO)
    sweep_dir, runs = plan(path, tmp_path / "out")
    assert len(runs) == 4
    assert len({r.seed for r in runs}) == 4  # every run its own seed
    # Two runs finished before the interruption; one was half-written.
    for r in runs[:2]:
        r.run_dir.mkdir(parents=True)
        (r.run_dir / runner.DONE).write_text("earlier")
        (r.run_dir / "metrics.json").write_text("{}")
    runs[2].run_dir.mkdir(parents=True)
    executed = []

    def fake_execute(run, run_id, record, on_progress=None):
        executed.append(run.run_dir)
        (run.run_dir / "raw").mkdir(parents=True, exist_ok=True)
        return []

    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr(runner, "analyse", lambda d: d / "report.html")
    monkeypatch.setattr(runner, "render_sweep", lambda d, dirs: d / "report.html")
    outcome = runner.run_scenario(path, tmp_path / "out", progress=False)
    assert executed == [runs[2].run_dir, runs[3].run_dir]
    assert outcome.run_dirs == [r.run_dir for r in runs]
    assert not outcome.failed
    assert all(runner.is_done(r.run_dir) for r in runs)
    assert (runs[0].run_dir / "metrics.json").read_text() == "{}"  # finished results untouched


def test_a_failed_run_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """An agent that fails does not end the sweep in a traceback: its run records the
    failure (raw/failures.json, no DONE), the next runs are executed, the outcome lists
    it, and the next `tlab run` tries it again."""
    path = tmp_path / "resume.toml"
    path.write_text(SCENARIO)
    executed = []

    def fake_execute(run, run_id, record, on_progress=None):
        executed.append(run.run_dir)
        (run.run_dir / "raw").mkdir(parents=True, exist_ok=True)
        if len(executed) == 2:
            return [AgentFailure("f", "a", "client", 2, "error: --streams requires --objects")]
        return []

    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr(runner, "analyse", lambda d: d / "report.html")
    monkeypatch.setattr(runner, "render_sweep", lambda d, dirs: d / "report.html")
    outcome = runner.run_scenario(path, tmp_path / "out", progress=False)
    assert len(executed) == 4
    (failed,) = outcome.failed
    assert failed.run_dir == executed[1]
    assert "f (client on a) exited 2: error: --streams requires --objects" in failed.line()
    assert not runner.is_done(failed.run_dir)
    assert '"exit_status": 2' in (failed.run_dir / "raw" / "failures.json").read_text()

    executed.clear()
    outcome = runner.run_scenario(path, tmp_path / "out", progress=False)
    assert executed == [failed.run_dir] and not outcome.failed


def test_a_sweep_stops_before_a_run_the_disk_has_no_room_for(tmp_path, monkeypatch):
    """Free space below twice the largest run so far: the sweep stops before the next run
    with one message naming the folder, the room and the run, and what is done is kept."""
    path = tmp_path / "resume.toml"
    path.write_text(SCENARIO)
    _, runs = plan(path, tmp_path / "out")
    executed = []

    def fake_execute(run, run_id, record, on_progress=None):
        executed.append(run.run_dir)
        (run.run_dir / "raw").mkdir(parents=True, exist_ok=True)
        (run.run_dir / "raw" / "packets.bin").write_bytes(b"\0" * 3000)  # the largest run: 3000 B
        return []

    def fake_usage(p):
        # 9000 B free at first; each run takes 3000 B of it.
        left = 9000 - 3000 * len(executed)
        return shutil._ntuple_diskusage(1 << 30, (1 << 30) - left, left)

    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr(runner, "analyse", lambda d: d / "report.html")
    monkeypatch.setattr(runner.shutil, "disk_usage", fake_usage)
    monkeypatch.setattr(runner, "MIN_FREE_BYTES", 5500)
    with pytest.raises(runner.DiskSpaceLow) as e:
        runner.run_scenario(path, tmp_path / "out", progress=False)
    # 9000 free: the first run starts (≥ 5500); then 6000 free, less than twice the first
    # run's 3000 B of packets and its other files.
    assert executed == [runs[0].run_dir]
    message = str(e.value)
    assert str(runs[1].run_dir) in message and "1 of 4 run(s) finished and kept" in message
    assert runner.is_done(runs[0].run_dir)


def test_the_disk_check_by_hand(tmp_path, monkeypatch):
    gib = 1 << 30
    monkeypatch.setattr(runner.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10 * gib, 7 * gib, 3 * gib))
    runner.check_free_space(tmp_path, gib, tmp_path / "next", 0, 1)  # 3 GiB ≥ max(2, 2 × 1)
    with pytest.raises(runner.DiskSpaceLow, match=r"3\.0 GiB free, and a run starts only with 4\.0 GiB"):
        runner.check_free_space(tmp_path, 2 * gib, tmp_path / "next", 0, 1)
    monkeypatch.setattr(runner.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10 * gib, 9 * gib, gib))
    with pytest.raises(runner.DiskSpaceLow, match=r"1\.0 GiB free, and a run starts only with 2\.0 GiB"):
        runner.check_free_space(tmp_path, 0, tmp_path / "next", 0, 1)
