"""Packet I/O inside a NetnsSwitch's namespace (run there with `python -c`)."""

from __future__ import annotations

import sys

from fairgate_topo.netns_switch import NetnsSwitch

SEND_PACED = """
import socket, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("{iface}", 0))
frame = bytes.fromhex("{frame}")
gap = 1.0 / {pps}
start = time.monotonic()
for i in range({count}):
    delay = start + i * gap - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    s.send(frame)
"""

SEND_AND_CAPTURE = """
import select, socket, time
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
rx.bind(("{rx}", 0))
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
tx.bind(("{tx}", 0))
frame = bytes.fromhex("{frame}")
deadline = time.monotonic() + {timeout}
tx.send(frame)
while time.monotonic() < deadline:
    ready, _, _ = select.select([rx], [], [], 0.2)
    if ready:
        data = rx.recv(4096)
        if data[23:24] == b"\\x11" and data[36:38] == (7471).to_bytes(2, "big"):
            print(data.hex())
            break
"""


def send_paced(sw: NetnsSwitch, port: int, frame: bytes, pps: float, count: int) -> None:
    script = SEND_PACED.format(iface=sw.host_intf(port), frame=frame.hex(), pps=pps, count=count)
    sw.run_in_ns([sys.executable, "-c", script], timeout=count / pps + 30)


def send_and_capture(
    sw: NetnsSwitch, tx: int, rx: int, frame: bytes, timeout: float = 3.0
) -> bytes:
    script = SEND_AND_CAPTURE.format(
        tx=sw.host_intf(tx), rx=sw.host_intf(rx), frame=frame.hex(), timeout=timeout
    )
    out = sw.run_in_ns([sys.executable, "-c", script], timeout=timeout + 10).stdout.strip()
    return bytes.fromhex(out) if out else b""
