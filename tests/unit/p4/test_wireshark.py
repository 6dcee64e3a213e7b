"""The Wireshark dissector is generated from p4src and decodes what the hosts send."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fairgate_p4 import gen, wireshark
from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader

TSHARK = shutil.which("tshark")


def test_committed_dissector_is_fresh() -> None:
    assert wireshark.OUTPUT.read_text() == wireshark.generate(), "run `make build`"
    assert gen.main(["--check"]) == 0


def test_dissector_follows_the_header_layout() -> None:
    defines = gen.parse_defines(gen.DEFINES.read_text())
    text = gen.HEADERS.read_text().replace(
        "bit<32> rate_kbps;\n}", "bit<32> rate_kbps;\n    bit<16> extra_kbps;\n}", 1
    )
    defines["FG_HEADER_BYTES"] = str(g.FG_HEADER_BYTES + 2)
    lua = wireshark.render(defines, gen.parse_headers(text))
    assert '"fairgate.extra_kbps", "Extra (kbit/s)"' in lua
    assert "t:add(f_extra_kbps, buf(28, 2))" in lua
    assert f"local HEADER_BYTES = {g.FG_HEADER_BYTES + 2}" in lua
    with pytest.raises(wireshark.LayoutError, match="FG_HEADER_BYTES"):
        wireshark.render(gen.parse_defines(gen.DEFINES.read_text()), gen.parse_headers(text))


def test_dissector_refuses_fields_it_cannot_express() -> None:
    text = gen.HEADERS.read_text().replace("bit<8>  reserved;", "bit<4> reserved;\n bit<4> r2;", 1)
    with pytest.raises(wireshark.LayoutError, match="4 bits"):
        wireshark.render(gen.parse_defines(gen.DEFINES.read_text()), gen.parse_headers(text))


def write_pcap(path: Path) -> None:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    data = RateHeader(kind=g.FG_KIND_DATA, flags=g.FG_FLAG_CONGESTED, seq=7, rtt_us=42_000)
    data.rate_kbps = 1987
    ack = RateHeader(kind=g.FG_KIND_ACK, seq=7, ack=8, ts_echo_us=123)
    rd = RateHeader(kind=g.FG_KIND_RD_BACKWARD, rate_kbps=500).pack()
    rd += (0xDEADBEEF).to_bytes(4, "big") + (1234).to_bytes(4, "big")
    base = Ether() / IP(src="10.0.1.1", dst="10.0.4.1")
    wrpcap(
        str(path),
        [
            base / UDP(sport=40000, dport=g.FG_UDP_PORT) / (data.pack() + b"x" * 20),
            base / UDP(sport=g.FG_UDP_PORT, dport=40000) / ack.pack(),
            base / UDP(sport=40000, dport=g.FG_UDP_PORT) / rd,
            base / UDP(sport=40000, dport=g.FG_UDP_PORT) / b"short",
        ],
    )


@pytest.mark.skipif(TSHARK is None, reason="tshark not found: apt-get install tshark")
def test_tshark_decodes_rate_header_and_rd_extension(tmp_path: Path) -> None:
    pcap = tmp_path / "fg.pcap"
    write_pcap(pcap)
    fields = ["fairgate.kind", "fairgate.seq", "fairgate.ack", "fairgate.rtt_us"]
    fields += ["fairgate.rate_kbps", "fairgate.flags.congested"]
    fields += ["fairgate.rd.flow_key", "fairgate.rd.apr_kbps", "_ws.col.Info"]
    cmd = [str(TSHARK), "-n", "-X", f"lua_script:{wireshark.OUTPUT}", "-r", str(pcap)]
    cmd += ["-T", "fields", *(x for f in fields for x in ("-e", f))]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0][:6] == ["1", "7", "0", "42000", "1987", "1"]
    assert rows[0][8] == "FairGate data seq=7 rate=1987 kbit/s"
    assert rows[1][:6] == ["2", "7", "8", "0", str(g.FG_RATE_UNLIMITED), "0"]
    assert rows[1][8].endswith("rate=unlimited")
    assert rows[2][0] == str(g.FG_KIND_RD_BACKWARD) and rows[2][6:8] == ["0xdeadbeef", "1234"]
    assert rows[3][0] == "", "a datagram shorter than the header must not be decoded"
