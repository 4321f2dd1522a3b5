"""Studies as data: a folder of scenario files and its `study.toml` (the experiments, the
designs they can run at, the figures and tables the study publishes), run with one
command (`tlab study`) into one study report. See docs/studies.md.

    study = load_study("scenarios/s3")
    outcome = run_study(study, Path("results"), design="machine")
"""

from transportlab.study.spec import Design, Experiment, Figure, Study, load_study

__all__ = ["Design", "Experiment", "Figure", "Study", "load_study"]
