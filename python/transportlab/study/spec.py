"""`study.toml`: a study's experiments (scenario files of its folder), the designs it can
run at (repetitions and sweep density) and the figures and tables it publishes, in the
study's order. Validated here; a bad file is one clear error naming file, field, value."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from transportlab.scenario.errors import Issue, ScenarioError
from transportlab.scenario.load import read_toml
from transportlab.scenario.validate import issues_from

FILE = "study.toml"

# How a figure is drawn (docs/studies.md):
#   lines      metric against the x axis' steps, one line per group, mean and 95 % interval
#   box        metric per x step and group, box plots over repetitions
#   table      rows = points (or x steps × groups), cells = mean ± 95 % interval (n)
#   timeseries one run's own plot (throughput, rtt, cwnd, queueing delay…) per point shown
#   query      SQL over the study's catalogue (a view `runs`), shown as a table
KINDS = ("lines", "box", "table", "timeseries", "query")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Design(_Strict):
    """How many repetitions and how dense a sweep: `repetitions` (unset: the file's own),
    `thin` = k keeps every k-th step of each axis with more than k steps (and its last),
    `points` keeps only sweep points with these labels (as the sweep report names them)."""

    repetitions: int | None = Field(None, ge=1, le=1000)
    thin: int = Field(1, ge=1, le=100)
    points: list[str] | None = None

    def over(self, base: Design) -> Design:
        """This design with what it leaves unset taken from `base`."""
        return Design(
            repetitions=self.repetitions if self.repetitions is not None else base.repetitions,
            thin=self.thin if "thin" in self.model_fields_set else base.thin,
            points=self.points if self.points is not None else base.points,
        )


class Experiment(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,60}$")
    file: str
    title: str
    # Per design name: what differs for this experiment from the study's design.
    designs: dict[str, Design] = {}
    # `--set` overrides always applied (an arm of a file, e.g. one protocol).
    set: list[str] = []


class Figure(_Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,60}$")
    title: str
    kind: Literal["lines", "box", "table", "timeseries", "query"]
    experiments: list[str] = Field(min_length=1)
    # What was measured, in the study's words (the caption's last part).
    measured: str
    # lines / box / table: catalogue columns (docs/studies.md lists them); the first is drawn.
    metrics: list[str] = []
    # lines / box: the sweep axis along x; `by`: axes (or "flow", "experiment") splitting lines/boxes.
    x: str | None = None
    by: list[str] = []
    # Rows kept: catalogue column = value (as text), e.g. {flow = "dl"} or {protocol = "probe"}.
    where: dict[str, str] = {}
    scale: float = 1.0
    unit: str = ""
    # timeseries: the run plot shown (a key of the run report's plots: throughput, rtt, cwnd…).
    plot: str | None = None
    # query: SQL over the view `runs` (rows of the figure's experiments only).
    sql: str | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> Figure:
        need = {
            "lines": ("metrics", "x"),
            "box": ("metrics",),
            "table": ("metrics",),
            "timeseries": ("plot",),
            "query": ("sql",),
        }[self.kind]
        missing = [f for f in need if not getattr(self, f)]
        if missing:
            raise ValueError(f"a {self.kind} figure needs {' and '.join(missing)}")
        return self


class Study(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,60}$")
    title: str
    description: str
    default_design: str
    designs: dict[str, Design] = Field(min_length=1)
    experiments: list[Experiment] = Field(min_length=1)
    figures: list[Figure] = []
    # Filled by load_study, not written in the file.
    folder: Path = Path(".")

    @field_validator("experiments")
    @classmethod
    def _unique(cls, v: list[Experiment]) -> list[Experiment]:
        names = [e.name for e in v]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"experiment names must differ: {', '.join(dup)} repeated")
        return v

    @model_validator(mode="after")
    def _references(self) -> Study:
        if self.default_design not in self.designs:
            raise ValueError(f"default_design {self.default_design!r} is not one of designs: {', '.join(self.designs)}")
        names = {e.name for e in self.experiments}
        for f in self.figures:
            unknown = [n for n in f.experiments if n not in names]
            if unknown:
                raise ValueError(f"figure {f.id!r} names unknown experiment(s) {', '.join(unknown)}")
        for e in self.experiments:
            unknown = [d for d in e.designs if d not in self.designs]
            if unknown:
                raise ValueError(f"experiment {e.name!r} sets unknown design(s) {', '.join(unknown)}")
        return self

    def experiment(self, name: str) -> Experiment:
        return next(e for e in self.experiments if e.name == name)

    def design_of(self, experiment: Experiment, design: str) -> Design:
        base = self.designs[design]
        own = experiment.designs.get(design)
        return own.over(base) if own else base

    def path_of(self, experiment: Experiment) -> Path:
        return self.folder / experiment.file


def load_study(folder: str | Path) -> Study:
    """The study of a folder (its study.toml), every experiment's file checked to exist.
    Raises ScenarioError (file, field, value) on a bad or missing file."""
    folder = Path(folder)
    path = folder / FILE if folder.is_dir() or not folder.name.endswith(".toml") else folder
    if not path.is_file():
        raise ScenarioError(str(path), [Issue("", f"no {FILE} here: a study folder holds one (docs/studies.md)")])
    raw = read_toml(path)
    try:
        study = Study.model_validate(dict(raw, folder=path.parent))
    except ValidationError as e:
        raise ScenarioError(str(path), issues_from(e, raw)) from None
    missing = [
        Issue(f"experiments[{i}].file", "no such scenario file in the study folder", e.file)
        for i, e in enumerate(study.experiments)
        if not (path.parent / e.file).is_file()
    ]
    if missing:
        raise ScenarioError(str(path), missing)
    return study
