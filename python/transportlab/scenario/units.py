"""Human units at the scenario boundary, parsed once into SI values.

durations → seconds (float), rates → bits/s (float), sizes → bytes (int),
percentages → probabilities in [0, 1] (float). Every parser raises `ValueError` whose
message says what was expected; the caller adds the field path and the offending value.
Numbers are parsed as decimals, so "0.1%" is exactly 0.001 and "1.5KiB" exactly 1536.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_NUMBER_UNIT = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-zµ/%]*)\s*$")

# Duration units → seconds.
DURATION_UNITS: dict[str, Decimal] = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "min": Decimal(60),
    "h": Decimal(3600),
}

# Rate units → bits/s. Prefixes are decimal (k = 1000). "Mbps" means megabits per second
# (the common usage), never tc's megabytes per second.
_RATE_PREFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
RATE_UNITS: dict[str, Decimal] = {}
for _p, _m in _RATE_PREFIX.items():
    for _suffix in ("bit", "bit/s", "bps"):
        RATE_UNITS[_p + _suffix] = Decimal(_m)

# Size units → bytes: decimal SI prefixes (10MB = 10e6 bytes) and binary IEC ones.
SIZE_UNITS: dict[str, Decimal] = {
    "B": Decimal(1),
    "kB": Decimal(10**3),
    "KB": Decimal(10**3),
    "MB": Decimal(10**6),
    "GB": Decimal(10**9),
    "TB": Decimal(10**12),
    "KiB": Decimal(2**10),
    "MiB": Decimal(2**20),
    "GiB": Decimal(2**30),
    "TiB": Decimal(2**40),
}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _split(value: str) -> tuple[Decimal, str] | None:
    m = _NUMBER_UNIT.match(value)
    if not m:
        return None
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:  # pragma: no cover - the regex only admits valid numbers
        return None
    if not number.is_finite():
        return None
    return number, m.group(2)


def parse_duration(value: object, *, allow_bare: bool = False) -> float:
    """ "10ms", "2s", "500us", "1.5min", "0s" → seconds. A bare number (in seconds) only
    when `allow_bare`. Durations are never negative."""
    expected = "expected a duration like '10ms', '2s', '500us' or '1.5min'"
    if _is_number(value):
        if not allow_bare:
            raise ValueError(f"{expected}: a bare number needs a unit")
        seconds = Decimal(str(value))
    elif isinstance(value, str):
        parsed = _split(value)
        if parsed is None or parsed[1] not in DURATION_UNITS:
            raise ValueError(f"{expected} (units: ns, us, ms, s, min, h)")
        seconds = parsed[0] * DURATION_UNITS[parsed[1]]
    else:
        raise ValueError(expected)
    if seconds < 0:
        raise ValueError("expected a duration that is not negative")
    return float(seconds)


def parse_rate(value: object) -> float:
    """ "5Mbit", "1Gbit", "600kbit", "100bit", "10Mbps", "10Mbit/s" → bits/s (> 0)."""
    expected = "expected a rate like '10Mbit' (units: bit, kbit, Mbit, Gbit; or kbps, Mbps, Gbps)"
    if not isinstance(value, str):
        raise ValueError(expected)
    parsed = _split(value)
    if parsed is None:
        raise ValueError(expected)
    number, unit = parsed
    # Accept tc-style lower case ("mbit") and SI case ("Mbit") alike, but not byte rates.
    # "…bps" only in SI case: tc reads "mbps" as megabytes per second.
    key = unit[:1].lower() + unit[1:] if unit[:1] in "KMGT" else unit
    if key.endswith("bps") and unit not in ("bps", "kbps", "Mbps", "Gbps", "Tbps"):
        raise ValueError(f"{expected}: '{unit}' is ambiguous (tc reads it as bytes per second); write 'Mbit' or 'Mbps'")
    if key not in RATE_UNITS:
        if "B" in unit or "byte" in unit.lower():
            raise ValueError(f"{expected}: byte rates are not accepted, write bits")
        raise ValueError(expected)
    bps = number * RATE_UNITS[key]
    if bps <= 0:
        raise ValueError("expected a rate greater than zero")
    return float(bps)


def parse_size(value: object) -> int:
    """1448 (an integer: bytes), "1448B", "10MB" (10e6 bytes), "64KiB" → bytes (≥ 0)."""
    expected = "expected a size like '1448B', '10MB' or '64KiB' (or an integer number of bytes)"
    if isinstance(value, bool):
        raise ValueError(expected)
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, str):
        parsed = _split(value)
        if parsed is None or parsed[1] not in SIZE_UNITS:
            hint = ": sizes are in bytes (B, kB, MB, GB, KiB, MiB, GiB)" if parsed and "bit" in parsed[1] else ""
            raise ValueError(expected + hint)
        number = parsed[0] * SIZE_UNITS[parsed[1]]
    else:
        raise ValueError(expected)
    if number < 0:
        raise ValueError("expected a size that is not negative")
    if number != number.to_integral_value():
        raise ValueError(f"expected a whole number of bytes (this is {number} bytes)")
    return int(number)


def parse_percentage(value: object) -> float:
    """ "0.1%" → 0.001; a plain number is taken as a probability and must be in [0, 1]."""
    expected = "expected a percentage like '0.1%' or a probability between 0 and 1"
    if _is_number(value):
        p = Decimal(str(value))
        if not 0 <= p <= 1:
            raise ValueError(f"{expected}: a plain number is a probability; write '{value}%' for a percentage")
        return float(p)
    if isinstance(value, str):
        parsed = _split(value)
        if parsed is None or parsed[1] != "%":
            raise ValueError(expected)
        if not 0 <= parsed[0] <= 100:
            raise ValueError("expected a percentage between 0% and 100%")
        return float(parsed[0] / 100)
    raise ValueError(expected)
