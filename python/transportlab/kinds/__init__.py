"""Flow kinds as plug-ins: one module per kind owns its scenario fields and checks, its
agent command lines and how its summaries become metrics. Adding a kind is a module and
a line here; the stages look kinds up by the scenario's `protocol`."""

from __future__ import annotations

from transportlab.kinds.base import COMMON_FIELDS, Endpoints, Files, FlowKind
from transportlab.kinds.quic import Quic
from transportlab.kinds.tcp import Tcp
from transportlab.kinds.udp import Udp
from transportlab.kinds.utp import Utp

KINDS: dict[str, FlowKind] = {k.name: k for k in (Tcp(), Udp(), Quic(), Utp())}


def kind(protocol: str) -> FlowKind:
    """The kind of a validated flow (the schema has already refused unknown ones)."""
    return KINDS[protocol]


__all__ = ["COMMON_FIELDS", "Endpoints", "Files", "FlowKind", "KINDS", "kind"]
