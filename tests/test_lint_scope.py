"""`make lint` reaches every Python file under python/, tests/, bench/ and scripts/: a
file without the .py ending (a bench script run by its shebang) must be in ruff's
`extend-include`, and the Makefile's ruff lines name every one of those folders."""

from __future__ import annotations

import subprocess
import tomllib

from transportlab.locations import PROJECT_ROOT

FOLDERS = ("python", "tests", "bench", "scripts")


def _python_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", *FOLDERS], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    files = []
    for f in out.stdout.split():
        path = PROJECT_ROOT / f
        if f.endswith(".py") or (
            path.is_file() and path.read_bytes()[:64].startswith(b"#!") and b"python" in path.read_bytes()[:64]
        ):
            files.append(f)
    return files


def test_every_python_file_is_linted():
    ruff = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
    included = set(ruff.get("extend-include", []))
    unlinted = [f for f in _python_files() if not f.endswith(".py") and f not in included]
    assert not unlinted, f"add to [tool.ruff] extend-include: {unlinted}"
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    for cmd in ("ruff check", "ruff format --check"):
        (line,) = [l for l in makefile.splitlines() if l.strip().startswith(cmd)]
        assert set(FOLDERS) <= set(line.split()[len(cmd.split()) :]), line
