"""An interrupted sweep resumes: finished runs (with their DONE marker) are kept and
skipped, unfinished ones are run; seeds are derived per point and repetition."""

import textwrap

from transportlab import runner

SCENARIO = textwrap.dedent(
    """
    name = "resume"
    duration = "2s"
    repetitions = 2
    hosts = ["a", "b"]
    [[links]]
    name = "l"
    between = ["a", "b"]
    forward = { rate = "10Mbit" }
    [[flows]]
    name = "f"
    from = "a"
    to = "b"
    protocol = "tcp"
    [sweep]
    "links.l.forward.rate" = ["5Mbit", "10Mbit"]
    """
)


def test_interrupted_sweep_runs_only_what_is_missing(tmp_path, monkeypatch):
    path = tmp_path / "resume.toml"
    path.write_text(SCENARIO)
    sweep_dir, runs = runner.plan(path, tmp_path / "out")
    assert len(runs) == 4
    assert len({r.seed for r in runs}) == 4  # every run its own seed
    # Two runs finished before the interruption; one was half-written.
    for r in runs[:2]:
        r.run_dir.mkdir(parents=True)
        (r.run_dir / runner.DONE).write_text("earlier")
        (r.run_dir / "metrics.json").write_text("{}")
    runs[2].run_dir.mkdir(parents=True)
    executed = []

    def fake_execute(run, run_id, on_progress=None):
        executed.append(run.run_dir)
        run.run_dir.mkdir(parents=True, exist_ok=True)
        (run.run_dir / runner.DONE).write_text("now")

    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr(runner, "render_sweep", lambda d, dirs: d / "report.html")
    _, run_dirs = runner.run_scenario(path, tmp_path / "out", progress=False)
    assert executed == [runs[2].run_dir, runs[3].run_dir]
    assert run_dirs == [r.run_dir for r in runs]
    assert (runs[0].run_dir / "metrics.json").read_text() == "{}"  # finished results untouched
