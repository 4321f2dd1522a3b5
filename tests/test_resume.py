"""An interrupted sweep resumes: finished runs (with their DONE marker) are kept and
skipped, unfinished ones are run; seeds are derived per point and repetition."""

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
