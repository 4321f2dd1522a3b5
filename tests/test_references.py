"""References in the repository point into it: every path a source file, doc or scenario
names (`docs/…`, `scenarios/…`, `crates/…`, …) exists, and no file cites the planning
documents, which are not in the repository (cite docs/ instead)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from transportlab.locations import PROJECT_ROOT

_TOPS = "scenarios|docs|crates|python|bench|tests|contracts|scripts|bpf"
_PATH = re.compile(rf"(?<![\w/.-])((?:{_TOPS})/[\w./-]+\.(?:toml|md|rs|py|json|sh))")
_OUTSIDE = re.compile(r"\b(?:DESIGN|EXPERIMENTS|ALGORITHMS)\.md\b|shared/")
_TEXT = (".py", ".rs", ".md", ".toml", ".sh", ".go", ".c")


def _files() -> list[Path]:
    """Tracked text files, but the CHANGELOG: it records what was, files since gone included."""
    out = subprocess.run(["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True).stdout
    return [PROJECT_ROOT / f for f in out.split() if f.endswith(_TEXT) and "/vendor/" not in f and f != "CHANGELOG.md"]


def _exists(path: str, where: Path) -> bool:
    # From the root, or relative to a folder above the file (a path inside a crate, named from its Cargo.toml).
    return any((d / path).exists() for d in [PROJECT_ROOT, *where.parents] if d.is_relative_to(PROJECT_ROOT))


def test_named_paths_exist():
    missing = [
        f"{f.relative_to(PROJECT_ROOT)}:{n}: {m.group(1)}"
        for f in _files()
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
        for m in _PATH.finditer(line)
        if "*" not in m.group(1) and not _exists(m.group(1).rstrip("."), f)
    ]
    assert not missing, "\n".join(missing)


def test_no_citation_of_documents_outside_the_repository():
    cited = [
        f"{f.relative_to(PROJECT_ROOT)}:{n}"
        for f in _files()
        if f.name != Path(__file__).name
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
        if _OUTSIDE.search(line)
    ]
    assert not cited, cited
