"""The results tables the docs quote (docs/results-*.md, bpf/RESULTS.md), as `tlab table
NAME …`: each module makes one kind of table, in Markdown, from finished runs read
through `RunDir` or the catalogue."""

from __future__ import annotations

from transportlab.report.tables.common import TableError

__all__ = ["TableError"]
