"""Layered audio over the CM: pick the best encoding the CM's rate allows (paper 001, 3).

The sender does not watch the network itself: it opens a CM flow, and on every
``change_rate`` callback switches to the highest layer not above the flow's rate.

``python -m fairgate_hosts.apps.audio --dst 10.0.0.2 --duration 20 --log audio.jsonl``
sends one frame every ``--frame-ms`` at the current layer (``--full-packets``: packets of
``--mss`` bytes, as often as the layer allows) through an in-process CM (see
``cmhost.py``); ``--bulk N`` adds N bulk flows to the same macroflow (joining at
``--bulk-join`` s) so the audio flow's share, and its layer, drops when they join.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from fairgate_hosts.agentio import JsonlLog, StopFlag, monotonic_us
from fairgate_hosts.apps.cm_args import add_cm_arguments, cm_config
from fairgate_hosts.apps.cmhost import CMHost, UdpFlow
from fairgate_hosts.apps.tcpcm import TcpCm, done_record, sample_lines
from fairgate_hosts.kernel_cc import current_default, resolve_kernel_cc
from fairgate_p4 import generated as g

LAYERS_KBPS: tuple[int, ...] = (10, 20, 40, 80, 160, 320)


def choose_layer(rate_Bps: float, layers_kbps: tuple[int, ...] = LAYERS_KBPS) -> int:
    """Highest layer (kbit/s) not above ``rate_Bps``; the lowest layer when none fits."""
    kbps = rate_Bps * 8 / 1000
    fitting = [layer for layer in sorted(layers_kbps) if layer <= kbps]
    return fitting[-1] if fitting else min(layers_kbps)


@dataclass
class LayeredAudio:
    """Holds the current layer; ``change_rate`` is the CM callback."""

    layers_kbps: tuple[int, ...] = LAYERS_KBPS
    layer_kbps: int = LAYERS_KBPS[0]
    history: list[tuple[float, int]] = field(default_factory=list)
    # 0: one frame per frame interval, its size the layer's; > 0: packets of this size, as
    # often as the layer's rate allows (the paper's server "always performed transmissions
    # of 1KB packets")
    packet_bytes: int = 0

    def change_rate(self, rate_Bps: float) -> None:
        self.layer_kbps = choose_layer(rate_Bps, self.layers_kbps)
        self.history.append((rate_Bps, self.layer_kbps))

    def frame_bytes(self, frame_ms: float = 20.0) -> int:
        """Bytes of the next audio packet: one frame at the current layer, or a full packet."""
        if self.packet_bytes > 0:
            return self.packet_bytes
        return max(1, int(self.layer_kbps * frame_ms / 8))

    def gap_us(self, frame_ms: float = 20.0) -> int:
        """Time to the next packet: the frame interval, or a full packet at the layer's rate."""
        if self.packet_bytes > 0:
            return max(1, round(self.packet_bytes * 8_000 / self.layer_kbps))
        return max(1, round(frame_ms * 1000))


@dataclass
class AudioApp:
    """The audio flow plus optional bulk flows joining the same macroflow."""

    log: JsonlLog
    frame_ms: float
    bulk: int
    bulk_join_s: float
    interval_s: float
    audio: LayeredAudio = field(default_factory=LayeredAudio)
    start_us: int = field(default_factory=monotonic_us)
    flow: UdpFlow | None = None
    bulk_flows: list[UdpFlow] = field(default_factory=list)
    backlog: int = 0  # requested, not yet granted
    next_frame_us: int = 0
    next_sample_us: int = 0
    last_sent: int = 0
    frames: int = 0
    frames_skipped: int = 0
    layer_time_us: dict[int, int] = field(default_factory=dict)
    _layer_since_us: int = 0

    def _t(self, now_us: int) -> float:
        return round((now_us - self.start_us) / 1e6, 3)

    def on_grant(self, host: CMHost, flow: UdpFlow, nbytes: int, now_us: int) -> None:
        host.send(flow, nbytes, now_us)
        if flow is self.flow:
            self.backlog = max(0, self.backlog - nbytes)

    def on_rate(self, host: CMHost, flow: UdpFlow, rate_Bps: float, now_us: int) -> None:
        if flow is not self.flow:
            return
        old = self.audio.layer_kbps
        self.audio.change_rate(rate_Bps)
        if self.audio.layer_kbps != old:
            self.layer_time_us[old] = self.layer_time_us.get(old, 0) + now_us - self._layer_since_us
            self._layer_since_us = now_us
        self.log.write(
            {
                "type": "layer",
                "t_s": self._t(now_us),
                "rate_kbps": round(rate_Bps * 8 / 1000, 2),
                "layer_kbps": self.audio.layer_kbps,
                "changed": self.audio.layer_kbps != old,
            }
        )

    def on_timer(self, host: CMHost, now_us: int) -> None:
        if self.flow is None:
            self._layer_since_us = now_us
            self.flow = host.open()
            self.next_frame_us = now_us
            self.log.write(
                {"type": "open", "role": "audio", "fid": self.flow.fid, "sport": self.flow.sport}
            )
            # The paper's applications learn the rate at start from cm_query: change_rate
            # reports only changes, and with the switch's explicit rate equal to the CM's
            # initial one the first change can be seconds away (the audio sent its lowest
            # layer until then).
            self.on_rate(host, self.flow, host.cm.query(self.flow.fid)["rate_Bps"], now_us)
        t = (now_us - self.start_us) / 1e6
        if len(self.bulk_flows) < self.bulk and t >= self.bulk_join_s:
            for _ in range(self.bulk):
                flow = host.open()
                self.bulk_flows.append(flow)
                self.log.write(
                    {"type": "open", "role": "bulk", "fid": flow.fid, "sport": flow.sport}
                )
                host.request(flow, 1 << 40, self)
        while now_us >= self.next_frame_us:
            self.next_frame_us += self.audio.gap_us(self.frame_ms)
            size = self.audio.frame_bytes(self.frame_ms)
            # The CM's round robin grants a flow at most what it has queued per round: keep up
            # to one MSS queued so a small-frame flow is not starved by bulk flows; beyond
            # that the CM is behind, so drop the frame rather than queue it.
            if self.backlog + size > max(2 * size, host.cfg.mss):
                self.frames_skipped += 1
                continue
            self.frames += 1
            self.backlog += size
            host.request(self.flow, size, self)
        if now_us >= self.next_sample_us:
            sent = self.flow.sent_bytes
            mf = host.cm.macroflows.get(host.dst)
            self.log.write(
                {
                    "type": "sample",
                    "t_s": self._t(now_us),
                    "layer_kbps": self.audio.layer_kbps,
                    "share_kbps": round(self.flow.rate_Bps * 8 / 1000, 2),
                    "sent_kbps": round((sent - self.last_sent) * 8 / self.interval_s / 1000, 2),
                    "bulk_flows": len(self.bulk_flows),
                    "macroflow_kbps": round(mf.rate_Bps * 8 / 1000, 1) if mf else None,
                    "losses": mf.aimd.losses + mf.aimd.timeouts if mf else None,
                }
            )
            self.last_sent = sent
            self.next_sample_us = now_us + int(self.interval_s * 1e6)

    def done(self, now_us: int) -> dict[str, Any]:
        times = dict(self.layer_time_us)
        layer = self.audio.layer_kbps
        times[layer] = times.get(layer, 0) + now_us - self._layer_since_us
        return {
            "type": "done",
            "t_s": self._t(now_us),
            "frames": self.frames,
            "frames_skipped": self.frames_skipped,
            "sent_bytes": self.flow.sent_bytes if self.flow else 0,
            "layer_changes": sum(
                1
                for a, b in zip(self.audio.history, self.audio.history[1:], strict=False)
                if a[1] != b[1]
            ),
            "seconds_per_layer": {str(k): round(v / 1e6, 3) for k, v in sorted(times.items())},
        }


def audio_account(done: dict[str, Any]) -> dict[str, Any]:
    """The run facts of an audio app's ``done`` record (:meth:`AudioApp.done`): mean
    kbit/s sent, seconds per layer, layer changes and frames; both engines report this."""
    secs = max(1e-6, float(done["t_s"]))
    return {
        "sent_kbps": round(done["sent_bytes"] * 8 / secs / 1000, 2),
        "seconds_per_layer": done["seconds_per_layer"],
        "layer_changes": done["layer_changes"],
        "frames": done["frames"],
        "frames_skipped": done["frames_skipped"],
    }


@dataclass
class AudioWithTcp(AudioApp):
    """The audio app plus TCP/CM connections on the same CM, hence the same macroflow
    (Fig. 10: audio and a TCP/CM transfer to one receiver). The TCP side is ``tcpcm``'s
    (grant-driven writes, TCP_INFO feedback, the kernel trace) writing its own log in
    ``tcpcm``'s format; its grants reach it through ``CMHost.foreign_grant``."""

    tcp: TcpCm | None = None
    tcp_log: JsonlLog | None = None
    tcp_start_us: int = 0
    next_feedback_us: int = 0
    next_tcp_sample_us: int = 0

    def on_timer(self, host: CMHost, now_us: int) -> None:
        super().on_timer(host, now_us)
        tcp = self.tcp
        if tcp is None or self.tcp_log is None:
            return
        if tcp.route is None:
            tcp.route = lambda evs: host.handle(evs, self, monotonic_us())
            host.foreign_grant = tcp.on_grant
            self.tcp_start_us = now_us
            self.next_tcp_sample_us = now_us + int(self.interval_s * 1e6)
        while len(tcp.conns) < tcp.flows_n:
            c = tcp.join()
            sport = c.sock.getsockname()[1]
            self.tcp_log.write({"type": "open", "role": "tcpcm", "flow": c.idx, "sport": sport})
        host.handle(tcp.flush(now_us), self, now_us)
        if now_us >= self.next_feedback_us:
            tcp.feedback(now_us)
            self.next_feedback_us = now_us + tcp.feedback_us
        if now_us >= self.next_tcp_sample_us:
            t_s = round((now_us - self.tcp_start_us) / 1e6, 3)
            sample_lines(tcp, self.tcp_log, t_s, self.interval_s)
            self.next_tcp_sample_us += int(self.interval_s * 1e6)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.apps.audio",
        description="Layered audio over the Congestion Manager (paper 001, Fig. 10): on "
        "every change_rate pick the highest of the layers not above the flow's CM rate.",
    )
    p.add_argument("--dst", required=True, help="receiver agent's IPv4 address")
    p.add_argument("--port", type=int, default=g.FG_UDP_PORT, help="receiver agent's UDP port")
    p.add_argument("--duration", type=float, default=20.0, help="seconds")
    p.add_argument(
        "--layers",
        default=",".join(map(str, LAYERS_KBPS)),
        help="encodings, kbit/s (default 10,20,40,80,160,320)",
    )
    p.add_argument("--frame-ms", type=float, default=20.0, help="one frame every F ms")
    p.add_argument(
        "--full-packets",
        action="store_true",
        help="send --mss-byte packets as often as the layer allows, not one frame per --frame-ms",
    )
    p.add_argument("--bulk", type=int, default=0, help="bulk flows sharing the macroflow")
    p.add_argument("--bulk-join", type=float, default=5.0, help="when they join, s")
    p.add_argument("--interval", type=float, default=0.5, help="sample interval, s")
    add_cm_arguments(p, mss=1200, max_rate_kbps=1000.0, probing=True)
    p.add_argument("--log", default="-", help="JSONL output (default stdout)")
    p.add_argument("--tcp-flows", type=int, default=0, help="TCP/CM connections on the same CM (0)")
    p.add_argument("--tcp-port", type=int, default=5001, help="their sink's TCP port")
    p.add_argument("--tcp-log", default=None, help="their JSONL log (tcpcm's format)")
    p.add_argument("--kernel-cc", default="auto", help="their kernel congestion control")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    layers = tuple(sorted(int(x) for x in args.layers.split(",")))
    cfg = cm_config(args)
    log = JsonlLog(args.log)
    log.write({"type": "agent", "agent": "audio", "wall_time": time.time(), "args": vars(args)})
    host = CMHost(args.dst, args.port, cfg)
    app = AudioWithTcp(
        log,
        args.frame_ms,
        args.bulk,
        args.bulk_join,
        args.interval,
        audio=LayeredAudio(layers, layers[0], packet_bytes=args.mss if args.full_packets else 0),
    )
    if args.tcp_flows > 0:
        if args.tcp_log is None:
            print("audio: --tcp-flows needs --tcp-log", file=sys.stderr)
            return 2
        try:
            kcc = resolve_kernel_cc(args.kernel_cc)
        except ValueError as exc:
            print(f"audio: {exc}", file=sys.stderr)
            return 2
        app.tcp = TcpCm(args.dst, args.tcp_port, host.cm, args.tcp_flows, kernel_cc=kcc)
        app.tcp_log = JsonlLog(args.tcp_log)
        app.tcp_log.write(
            {"type": "agent", "agent": "tcpcm", "wall_time": time.time(), "args": vars(args)}
        )
        app.tcp_log.write({"type": "kernel_cc", "name": kcc or current_default()})
    stop = StopFlag().install()
    try:
        host.run(app, args.duration, min(0.005, args.frame_ms / 4000), stop)
        now = monotonic_us()
        log.write(app.done(now) | {"cm": host.stats()})
        if app.tcp is not None and app.tcp_log is not None:
            app.tcp.feedback(now)
            secs = max(1e-6, (now - app.tcp_start_us) / 1e6)
            app.tcp_log.write(done_record(app.tcp, secs))
    except OSError as exc:
        print(f"audio: {exc}", file=sys.stderr)
        return 1
    finally:
        if app.tcp is not None:
            app.tcp.close()
        if app.tcp_log is not None:
            app.tcp_log.close()
        host.close_all()
        log.close()
    return 1 if stop.stopped else 0


if __name__ == "__main__":
    raise SystemExit(main())
