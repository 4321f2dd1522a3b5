"""The Python package keeps its layering (docs/architecture.md): a pipeline stage imports
only the stages before it, and no module imports a stage after its own. Checked on the
source with `ast`, lazy imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "transportlab"
STAGES = ["scenario", "plan", "network", "artefacts", "run", "metrics", "report", "fidelity"]
# Modules beside the stages, with the last stage each may import (None: none at all).
# Flow kinds span stages by design: each kind's hooks are called by the stage they serve.
BESIDE = {
    "locations": None,
    "contract": None,
    "processes": None,  # ending a child process: the runner's and the stack ends'
    "utp_agent": None,  # runs inside a namespace; imports no stage
    "stacks": "artefacts",  # runs inside a namespace; reads its stack's qlog with the one reader
    "kinds": "metrics",
    "cluster": "run",  # runs on Dask workers; the pipeline analyses what comes back
    "pipeline": "report",
    "study": "fidelity",  # runs a study's experiments through the pipeline, draws its report
    "cli": "cli",  # above every stage
    "__main__": "__main__",  # above `cli`
    "__init__": None,
}
ORDER = STAGES + ["cli", "__main__"]


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; the package uses absolute imports")
    return {m.split(".")[1] for m in out if m.startswith("transportlab.") and len(m.split(".")) > 1}


def _limit(top: str) -> int:
    if top in STAGES:
        return STAGES.index(top)
    last = BESIDE[top]
    return -1 if last is None else ORDER.index(last)


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_a_module_imports_only_earlier_stages(path: Path):
    rel = path.relative_to(PACKAGE)
    top = rel.parts[0].removesuffix(".py")
    limit = _limit(top)
    for target in sorted(_imports(path) - {top}):
        if target in STAGES:
            assert STAGES.index(target) <= limit, f"{rel} ({top}) imports the later stage {target}"
        elif target != "kinds":  # a kind's hooks serve the stage that calls them
            assert _limit(target) < max(limit, 0) or BESIDE[target] is None, f"{rel} ({top}) imports {target}"


def test_every_top_level_module_is_placed():
    tops = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert tops <= set(STAGES) | set(BESIDE), tops - set(STAGES) - set(BESIDE)
