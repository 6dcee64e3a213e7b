"""Send one prebuilt Ethernet frame as fast as possible on an interface for a
number of seconds; print how many were sent. Runs inside a benchmark's
network namespace (needs root for AF_PACKET)."""

from __future__ import annotations

import argparse
import socket
import time


def blast(iface: str, frame: bytes, seconds: float) -> int:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((iface, 0))
    send = sock.send
    sent = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(256):
            try:
                send(frame)
                sent += 1
            except BlockingIOError:  # pragma: no cover - kernel queue full
                pass
    sock.close()
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("iface")
    parser.add_argument("frame_hex")
    parser.add_argument("seconds", type=float)
    args = parser.parse_args()
    print(blast(args.iface, bytes.fromhex(args.frame_hex), args.seconds))


if __name__ == "__main__":
    main()
