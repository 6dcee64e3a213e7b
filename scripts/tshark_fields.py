"""The fields of every packet a display filter keeps in a pcap, read with tshark: the
reader the pcap scripts share (pcap_drops, pcap_jitter, tcp_pcap_classes)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["rows", "tshark_missing"]


def rows(pcap: str, fields: Sequence[str], display_filter: str) -> list[list[str]]:
    """One list of field values per packet (tshark's text, "" where a field is absent).
    Raises subprocess.CalledProcessError when tshark cannot read ``pcap``."""
    cmd = ["tshark", "-r", pcap, "-n", "-T", "fields", "-E", "separator=,"]
    cmd += [x for f in fields for x in ("-e", f)]
    cmd += ["-Y", display_filter]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split(",") for line in out.splitlines()]


def tshark_missing(prog: str) -> bool:
    """True (and a line on stderr saying how to get it) when tshark is not installed."""
    if shutil.which("tshark") is not None:
        return False
    print(f"{prog}: tshark not found (Debian: apt install tshark)", file=sys.stderr)
    return True
