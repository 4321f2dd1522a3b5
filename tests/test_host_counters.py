"""Host counters read from a namespace's /proc/net/snmp (network.netns.parse_snmp), on a
hand-made copy of the file's format: each protocol a line of names, then of values."""

import pytest

from transportlab.network.netns import parse_snmp

SNMP = """\
Ip: Forwarding DefaultTTL InReceives
Ip: 2 64 12068
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn
Tcp: 1 200 120000 -1
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 80459 0 10 3341 10 0 0 0 0
"""


def test_each_protocols_counters_by_name():
    c = parse_snmp(SNMP)
    assert c["Udp"]["InDatagrams"] == 80459 and c["Udp"]["RcvbufErrors"] == 10 and c["Udp"]["InErrors"] == 10
    assert c["Tcp"]["MaxConn"] == -1
    assert set(c) == {"Ip", "Tcp", "Udp"}


def test_a_values_line_that_does_not_match_its_names_is_an_error():
    with pytest.raises(ValueError):
        parse_snmp("Udp: InDatagrams NoPorts\nUdp: 1\n")
