"""``make run EXP=two-bottleneck`` driven like a user at the ``mininet>`` prompt (issue #19).

A scripted session on standard input (one command per prompt): two senders that share link 1,
``fg-status``, ``fg-recv`` following the lab's receiver, exit. Checks the fair rate and the
senders' granted rates against link 1's capacity, then that nothing FairGate started is left
(PIDs, the hosts' network namespaces, the switch veths). A second session is interrupted with
SIGINT to the process group, as Ctrl-C in a terminal does, and left with Ctrl-D; a third is
interrupted during start-up. About 2 minutes in all; run under the lab lock.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fairgate_topo.interactive import lab_spec
from fairgate_topo.labnet import pps_to_kbps

REPO = Path(__file__).resolve().parents[2]
PROMPT = "mininet> "
# link 1 of experiments/two-bottleneck.toml: s1 -> s2, 400 pkt/s (3974 kbit/s of frames)
LINK1 = next(x for x in lab_spec("two-bottleneck").topology.links if (x.a, x.b) == ("s1", "s2"))
assert LINK1.rate_pps is not None
LINK1_KBPS = pps_to_kbps(LINK1.rate_pps)
S1_PORT = f"s1:{LINK1.a_port}"
TSHARK = shutil.which("tshark")


class Lab:
    """``make run`` with a pipe for standard input and a reader thread for its output."""

    def __init__(self, *extra: str) -> None:
        cmd = ["make", "-s", "--no-print-directory", "run", "EXP=two-bottleneck", *extra]
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, like a terminal's foreground job
        )
        self.out = ""
        self.pos = 0
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        try:
            while chunk := os.read(fd, 4096):
                with self._lock:
                    self.out += chunk.decode(errors="replace")
        except OSError:
            return  # closed by the test

    def expect(self, text: str, timeout_s: float) -> str:
        """Output from the last match up to and including ``text``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                i = self.out.find(text, self.pos)
                if i >= 0:
                    chunk = self.out[self.pos : i + len(text)]
                    self.pos = i + len(text)
                    return chunk
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} after {timeout_s} s; output:\n{self.out[-3000:]}")

    def run(self, line: str, timeout_s: float = 30.0) -> str:
        """Types ``line`` and returns what it printed before the next prompt."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        return self.expect(PROMPT, timeout_s)

    def interrupt(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)

    def close(self, timeout_s: float = 90.0) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait(timeout_s)
        self._reader.join(5)
        return code

    def kill(self) -> None:
        """SIGTERM to the group (the lab cleans up), SIGKILL after a minute."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def run_dir(self) -> Path:
        m = re.search(r"building the network \((\S+)\)", self.out)
        assert m, self.out[-2000:]
        return Path(m.group(1))


def start_ticks(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else int(fields[19])


def left_behind(session: dict[str, Any]) -> list[str]:
    """What of the session still exists: processes, namespaces in use, veths."""
    out = [
        f"{name} (pid {pid})"
        for name, (pid, ticks) in session["pids"].items()
        if ticks is not None and start_ticks(pid) == ticks
    ]
    namespaces = set(session["netns"])
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ns = os.readlink(entry / "ns" / "net")
            except OSError:
                continue
            if ns in namespaces:
                out.append(f"pid {entry.name} in a lab namespace {ns}")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    present = {m.group(1) for m in re.finditer(r"^\d+: ([^:@]+)", links, re.M)}
    out += [f"interface {i}" for i in session["intfs"] if i in present]
    return out


def status_rows(text: str) -> dict[str, dict[str, float]]:
    rows = {}
    for m in re.finditer(
        r"^(s\d+:\d+)\s+-> (\S+)\s+rate\s+(\S+) kb/s\s+arrivals\s+(\d+) kb/s", text, re.M
    ):
        rate = float(m.group(3)) if m.group(3) not in ("-", "unlim") else float("nan")
        rows[m.group(1)] = {"rate": rate, "arrivals": float(m.group(4))}
    return rows


def granted_tail(path: Path, last_s: float = 3.0) -> float:
    samples = [json.loads(x) for x in path.read_text().splitlines()]
    samples = [s for s in samples if s.get("type") == "sample" and s.get("granted_kbps")]
    assert samples, f"{path} has no samples"
    end = samples[-1]["t_us"]
    tail = [s["granted_kbps"] for s in samples if s["t_us"] >= end - last_s * 1e6]
    return sum(tail) / len(tail)


@pytest.fixture(scope="module")
def scripted() -> Any:
    """One scripted session with PCAP=1: (transcript pieces, run folder, session, exit code)."""
    lab = Lab("PCAP=1")
    try:
        banner = lab.expect(PROMPT, 120)
        pieces = {"banner": banner}
        pieces["send1"] = lab.run("h1 fg-send r1 --for 40 &")
        pieces["send2"] = lab.run("h2 fg-send r2 --rate 20M --for 40 &")
        lab.run("sh sleep 14", 30)
        pieces["status"] = lab.run("fg-status")
        pieces["recv"] = lab.run("r1 fg-recv --for 3", 30)
        pieces["bad"] = lab.run("h3 fg-send nowhere")
        pieces["tcp"] = lab.run(
            "h3 fg-tcp r3 --flows poisson:20/s --sizes pareto:1.5,10k --for 3", 60
        )
        pieces["cm"] = lab.run("h3 fg-cm r3 --flows 2 --for 3", 30)
        run_dir = lab.run_dir()
        session = json.loads((run_dir / "session.json").read_text())
        assert lab.run_dir().exists()
        lab.proc.stdin.write(b"exit\n")  # type: ignore[union-attr]
        lab.proc.stdin.flush()  # type: ignore[union-attr]
        code = lab.close()
    finally:
        lab.kill()
    yield pieces, run_dir, session, code, lab.out
    shutil.rmtree(run_dir, ignore_errors=True)


def test_prompt_shows_the_cheat_sheet(scripted: Any) -> None:
    pieces, _run_dir, _session, code, out = scripted
    assert code == 0, out[-3000:]
    banner = pieces["banner"]
    assert f"{S1_PORT} -> s2  400 pkt/s = 3.97 Mbit/s" in banner, banner
    for cmd in ("fg-send", "fg-recv", "fg-tcp", "fg-cm", "fg-status"):
        assert cmd in banner


def test_two_senders_share_link1_and_fg_status_shows_it(scripted: Any) -> None:
    pieces, run_dir, _session, _code, _out = scripted
    rows = status_rows(pieces["status"])
    assert S1_PORT in rows, pieces["status"]
    fair = LINK1_KBPS / 2
    assert rows[S1_PORT]["rate"] == pytest.approx(fair, rel=0.25), pieces["status"]
    assert rows[S1_PORT]["arrivals"] > 0.8 * LINK1_KBPS, pieces["status"]
    logs = sorted((run_dir / "cmds").glob("h*-send-*.jsonl"))
    assert [p.name[:2] for p in logs] == ["h1", "h2"], logs
    for path in logs:
        assert granted_tail(path) == pytest.approx(fair, rel=0.2), path
    assert "r1 <- h1" in pieces["recv"], pieces["recv"]


def test_bad_input_is_one_line(scripted: Any) -> None:
    pieces, *_ = scripted
    lines = [x for x in pieces["bad"].splitlines() if x.strip() and x.strip() != PROMPT.strip()]
    assert len(lines) == 1 and lines[0].startswith("fg-send: unknown host 'nowhere'"), lines


def test_tcp_and_cm_commands_run_the_agents(scripted: Any) -> None:
    pieces, run_dir, *_ = scripted
    m = re.search(r"h3 -> r3: (\d+) flows offered, outcomes \{'completed': (\d+)\}", pieces["tcp"])
    assert m and int(m.group(1)) > 20 and m.group(1) == m.group(2), pieces["tcp"]
    m = re.search(r"h3 -> r3 \(CM\): total (\S+) (\S+), per flow .* Jain (\S+)", pieces["cm"])
    assert m and float(m.group(3)) > 0.9, pieces["cm"]
    assert list((run_dir / "cmds").glob("h3-tcp-*.summary.json"))
    assert list((run_dir / "cmds").glob("h3-cm-*.jsonl"))


def test_exit_leaves_nothing_behind(scripted: Any) -> None:
    _pieces, run_dir, session, _code, _out = scripted
    assert len(session["pids"]) >= 3 + 6 + 12 + 1  # switches, shells, agents, controller
    assert left_behind(session) == []
    assert not list((run_dir / "switches").glob("*.pid"))


@pytest.mark.skipif(TSHARK is None, reason="tshark not found: apt-get install tshark")
def test_tshark_decodes_the_rate_header_in_the_lab_pcap(scripted: Any) -> None:
    from fairgate_p4.wireshark import OUTPUT as DISSECTOR

    _pieces, run_dir, *_ = scripted
    pcap = run_dir / "pcap" / f"s1-eth{LINK1.a_port}_out.pcap"  # s1 -> s2: both flows' data
    assert pcap.stat().st_size > 10_000
    fields = ["fairgate.kind", "fairgate.rate_kbps", "fairgate.flags.congested", "ip.src"]
    cmd = [str(TSHARK), "-n", "-X", f"lua_script:{DISSECTOR}", "-r", str(pcap), "-Y", "fairgate"]
    cmd += ["-T", "fields", *(x for f in fields for x in ("-e", f))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    data = [r for r in rows if r[0] == "1"]
    assert len(data) > 1000, proc.stdout[:500]
    assert {r[3] for r in data} == {"10.0.1.1", "10.0.2.1"}
    stamped = [int(r[1]) for r in data[-200:]]
    # out of s1 towards s2: min-stamped by s1's fair rate for link 1 (half its capacity)
    assert sum(stamped) / len(stamped) == pytest.approx(LINK1_KBPS / 2, rel=0.3)


def test_ctrl_c_interrupts_commands_and_ctrl_d_leaves_nothing() -> None:
    lab = Lab()
    try:
        lab.expect(PROMPT, 120)
        run_dir = lab.run_dir()
        session = json.loads((run_dir / "session.json").read_text())
        assert lab.proc.stdin is not None
        lab.proc.stdin.write(b"h1 fg-send r1 --for 60\n")
        lab.proc.stdin.flush()
        lab.expect("granted", 20)  # the foreground sender is running
        lab.interrupt()
        stopped = lab.expect(PROMPT, 30)
        assert "interrupted after" in stopped, stopped
        lab.run("h2 fg-send r2 --for 60 &")
        deadline = time.monotonic() + 10
        while not any("fg-send" in p.read_text() for p in (run_dir / "pids").glob("*")):
            assert time.monotonic() < deadline, "the background fg-send never registered"
            time.sleep(0.1)
        lab.interrupt()  # at the prompt: Mininet prints Interrupt and stays
        lab.expect("Interrupt", 10)
        lab.close()  # Ctrl-D (make itself died of the first SIGINT, as in a terminal)
    finally:
        lab.kill()
    assert "stopped; run folder" in lab.out, lab.out[-3000:]
    assert left_behind(session) == []
    assert not list((run_dir / "pids").glob("*")), "an fg-* command outlived the lab"
    shutil.rmtree(run_dir, ignore_errors=True)


def test_closed_terminal_leaves_nothing() -> None:
    """SIGHUP to the group and nobody reading the output any more (a closed terminal)."""
    lab = Lab()
    try:
        lab.expect(PROMPT, 120)
        run_dir = lab.run_dir()
        session = json.loads((run_dir / "session.json").read_text())
        lab.run("h1 fg-send r1 --for 60 &")
        os.killpg(lab.proc.pid, signal.SIGHUP)
        assert lab.proc.stdout is not None
        lab.proc.stdout.close()  # the reader stops; prints now fail with EPIPE
        pid, ticks = session["lab_pid"]
        deadline = time.monotonic() + 90
        while start_ticks(pid) == ticks:
            assert time.monotonic() < deadline, "the lab did not stop after SIGHUP"
            time.sleep(0.2)
    finally:
        lab.kill()
    assert left_behind(session) == []
    shutil.rmtree(run_dir, ignore_errors=True)


def test_ctrl_c_during_start_up_leaves_nothing() -> None:
    lab = Lab()
    try:
        lab.expect("starting the controller", 120)
        assert PROMPT not in lab.out
        run_dir = lab.run_dir()
        switch_pids = [int(p.read_text()) for p in (run_dir / "switches").glob("*.pid")]
        assert len(switch_pids) == 3
        lab.interrupt()
        code = lab.close()
    finally:
        lab.kill()
    assert code != 0
    assert "stopped; run folder" in lab.out, lab.out[-2000:]
    for pid in switch_pids:
        assert start_ticks(pid) is None, f"switch {pid} still running"
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not re.search(r"^\d+: s[123]-eth", links, re.M), links
    shutil.rmtree(run_dir, ignore_errors=True)
