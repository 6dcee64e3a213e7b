"""The BMv2 engine's network is the plan's, port for port (pure: no switch started)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fairgate_exp.load import EXPERIMENTS_DIR, load

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "topologies"))

from fairgate_exp.engines.bmv2 import cm_command, cm_peer_names, lab_topology  # noqa: E402


def test_ring_maps_port_for_port() -> None:
    plan = load(EXPERIMENTS_DIR / "ring.toml", "lab")
    topo = lab_topology(plan)
    for h in plan.hosts.values():
        lh = topo.hosts[h.name]
        assert (lh.switch, lh.port, lh.ip, lh.mac) == (h.switch, h.port, h.ip, h.mac)
    rates = {(x.a, x.a_port, x.b, x.b_port): x.rate_pps for x in topo.links}
    # 8 Mbit/s x 0.25 = 2 Mbit/s = 201 pkt/s of 1242 B frames, a -> b as in the file
    assert rates[("s1", 3, "s2", 3)] == 201
    assert rates[("s4", 4, "s1", 4)] == 252
    doc = plan.topology_doc(pps_only=True)
    link = next(x for x in doc["links"] if x["a"] == "s4:4")
    assert link["queue_rate_pps"] == 252 and link["b"] == "s1:4"


def test_refuses_what_bmv2_cannot_do(tmp_path: Path) -> None:
    base = """switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "r1", switch = "s2" }]
flows = [{ name = "f", src = "h1", dst = "r1" }]
"""
    path = tmp_path / "d.toml"
    path.write_text(
        base + 'links = [{ a = "s1", b = "s2", capacity = "1Mbit/s", delay = "5ms" }]\n'
    )
    with pytest.raises(ValueError, match="has a delay"):
        lab_topology(load(path))
    path.write_text(
        base + 'links = [{ a = "s1", b = "s2", capacity = "100pkt/s", reverse_capacity = '
        '"200pkt/s" }]\n'
    )
    with pytest.raises(ValueError, match="two different capacities"):
        lab_topology(load(path))
    path.write_text(
        base + 'links = [{ a = "s1", b = "s2", capacity = "100pkt/s" }]\n'
        '[measure]\nqueue = "exact"\n'
    )
    with pytest.raises(ValueError, match="simulator"):
        lab_topology(load(path))


def test_static_gates_and_searches_are_the_controllers() -> None:
    """Every session-control variant runs the controller: a static gate as
    ``--admit-rate`` (the controller keeps the meter and records its windows, so the
    static columns carry the port telemetry the simulator's do), a search as
    ``--session``; no gating passes neither."""
    from fairgate_exp.engines.bmv2 import controller_args

    plan = load(EXPERIMENTS_DIR / "session-control.toml")
    by = {v.name: controller_args(plan.with_variant(v), "none") for v in plan.variants}

    def opt(args: list[str], flag: str) -> str | None:
        return args[args.index(flag) + 1] if flag in args else None

    assert opt(by["static-50"], "--admit-rate") == "50"
    assert opt(by["static-50"], "--session-window") == "2"
    assert opt(by["static-50"], "--session") is None
    assert opt(by["strategy2"], "--session") == "strategy2"
    assert opt(by["strategy2"], "--admit-rate") is None
    assert "--admit-rate" not in by["none"] and "--session" not in by["none"]


def test_session_control_maps_the_gate_and_tcp_settings() -> None:
    from fairgate_exp.engines.bmv2 import tcp_sysctls

    plan = load(EXPERIMENTS_DIR / "session-control.toml")
    topo = lab_topology(plan)
    (link,) = topo.links
    assert (link.a, link.b, link.rate_pps, link.admission) == ("s1", "s2", 500, True)
    sysctls = tcp_sysctls(plan)
    assert sysctls["net.ipv4.tcp_syn_retries"] == "3"
    # the TCP the simulator models: Reno, SYN retries with exponential back-off
    assert sysctls["net.ipv4.tcp_congestion_control"] == "reno"
    assert sysctls["net.ipv4.tcp_syn_linear_timeouts"] == "0"
    assert tcp_sysctls(load(EXPERIMENTS_DIR / "ring.toml", "lab")) == {}


def test_refuses_short_bulk_tcp(tmp_path: Path) -> None:
    path = tmp_path / "bulk.toml"
    path.write_text(
        """switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "r1", switch = "s2" }]
links = [{ a = "s1", b = "s2", capacity = "100pkt/s" }]

[[tcp]]
name = "b"
src = "h1"
dst = "r1"
size = "300kB"
"""
    )
    with pytest.raises(ValueError, match="bulk flows on BMv2 are long-lived"):
        lab_topology(load(path))


@pytest.mark.parametrize(
    ("section", "mss", "refused"),
    [("tcp", 1448, False), ("tcp", 1449, True), ("cm", 1448, False), ("cm", 4030, True)],
)
def test_refuses_an_mss_the_kernel_would_clamp(
    tmp_path: Path, section: str, mss: int, refused: bool
) -> None:
    # kernel TCP on the lab's 1500 B MTU sends at most 1448 B segments (timestamps on) and
    # clamps a larger TCP_MAXSEG without a word: the simulator would run other segments
    flow = (
        f'{{ name = "t", src = "h1", dst = "r1", kind = "bulk", size = "1000MB", mss = "{mss}B" }}'
        if section == "tcp"
        else f'{{ name = "t", src = "h1", dst = "r1", app = "tcp", mss = "{mss}B" }}'
    )
    path = tmp_path / "mss.toml"
    path.write_text(
        f"""switches = ["s1", "s2"]
hosts = [{{ name = "h1", switch = "s1" }}, {{ name = "r1", switch = "s2" }}]
links = [{{ a = "s1", b = "s2", capacity = "100pkt/s" }}]
{section} = [{flow}]
"""
    )
    plan = load(path)
    if refused:
        with pytest.raises(ValueError, match=f"t: mss {mss} B is more than kernel TCP sends"):
            lab_topology(plan)
    else:
        assert lab_topology(plan).switches == ["s1", "s2"]


def test_ficcrd_lab_is_one_bottleneck_with_the_access_delays() -> None:
    from fairgate_exp.engines.bmv2 import tcp_sysctls

    plan = load(EXPERIMENTS_DIR / "ficcrd.toml", "lab")
    topo = lab_topology(plan)
    # only the bottleneck is limited: 0.6056 x 10 Mbit/s = 500 pkt/s of 1514 B frames
    limited = [q for q in topo.queues() if q[2] is not None]
    assert limited == [("s1", plan.port_by_label("s1->s2").port, 500, 200)]
    delays = {h: topo.hosts[h].delay_ms for h in topo.hosts if topo.hosts[h].delay_ms}
    assert delays == {f"h{i}": 24.0 + 16 * (10 - i) for i in range(1, 11)}
    assert topo.hosts["h1"].switch == "s0"  # the paper's source 0 behind router 10
    rtt = {f.name: round(plan.base_rtt_s(f) * 1000, 6) for f in plan.tcp_flows}
    assert (rtt["h10"], rtt["h1"]) == (48.0, 336.0) and len(set(rtt.values())) == 10
    assert tcp_sysctls(plan)["net.ipv4.tcp_congestion_control"] == "reno"
    # the paper's scale has 4 kB frames and link delays: the simulator's only
    with pytest.raises(ValueError, match="4096 B frames"):
        lab_topology(load(EXPERIMENTS_DIR / "ficcrd.toml", "paper"))


def test_cm_apps_run_as_the_hosts_apps_and_their_flows_are_named_as_in_the_simulator() -> None:
    plan = load(EXPERIMENTS_DIR / "cm-sharing.toml")
    assert lab_topology(plan).switches == ["s1", "s2"]
    bulk, audio = plan.cm
    cmd = cm_command(plan, bulk, 15.2, Path("/tmp/cm.jsonl"))
    assert cmd[1:4] == ["-m", "fairgate_hosts.apps.bulk", "--dst"]
    assert cmd[cmd.index("--duration") + 1] == "14.300"
    assert cmd[cmd.index("--flows") + 1] == "4" and cmd[cmd.index("--aging") + 1] == "min_rtt"
    # the apps' mss follows the rate header: UDP payload = the file's (1200 B)
    assert cmd[cmd.index("--mss") + 1] == str(1200 - 28)
    cmd = cm_command(plan, audio, 30.0, Path("/tmp/voice.jsonl"))
    assert cmd[2] == "fairgate_hosts.apps.audio" and "--bulk" in cmd
    assert cmd[cmd.index("--layers") + 1] == "80,160,320,640,1280,2560"
    recs = [
        {"type": "agent"},
        {"type": "open", "role": "audio", "fid": 1, "sport": 5000},
        {"type": "open", "role": "bulk", "fid": 2, "sport": 5002},
        {"type": "sample"},
    ]
    assert cm_peer_names(audio, "10.0.1.1", recs) == {
        "10.0.1.1:5000": "voice-audio",
        "10.0.1.1:5002": "voice-0",
    }


DROPTAIL_CM = """
switches = ["s1", "s2"]
hosts = [
  { name = "h1", switch = "s1" }, { name = "h2", switch = "s1" },
  { name = "r1", switch = "s2" }, { name = "r2", switch = "s2" },
]
links = [ { a = "s1", b = "s2", capacity = "250pkt/s", buffer = "50pkt" } ]
tcp = [ { name = "reno", src = "h2", dst = "r2", congestion_control = "reno" } ]
cm = [
  %s,
  { name = "late", src = "h1", dst = "r1", app = "bulk", flows = 1, start = "%s" },
]
[experiment]
duration = "20s"
algorithms = ["none"]
"""


TCM = ", ".join(
    [
        '{ name = "tcm", src = "h1", dst = "r1", app = "tcp", flows = 4',
        'weights = [1, 1, 2, 4], stagger = "1s", aging = "srtt", mss = "1000B", stop = "20s" }',
    ]
)


def test_tcpcm_apps_run_as_tcpcm_with_the_files_settings(tmp_path: Path) -> None:
    from fairgate_exp.engines.bmv2 import TCPCM_INITCWND, tcpcm_host_commands

    f = tmp_path / "cmdt.toml"
    f.write_text(DROPTAIL_CM % (TCM, "0s"))
    # two apps of h1 towards r1 at once would be one macroflow of one CM: not on BMv2
    with pytest.raises(ValueError, match="share h1's macroflow to r1"):
        lab_topology(load(f))
    f.write_text((DROPTAIL_CM % (TCM, "20s")).replace('duration = "20s"', 'duration = "30s"'))
    plan = load(f)
    lab_topology(plan)
    tcm = plan.cm[0]
    cmd = cm_command(plan, tcm, 0.0, Path("/tmp/tcm.jsonl"))
    assert cmd[2] == "fairgate_hosts.apps.tcpcm" and cmd[cmd.index("--flows") + 1] == "4"
    assert cmd[cmd.index("--weights") + 1] == "1,1,2,4"
    assert cmd[cmd.index("--stagger") + 1] == "1" and cmd[cmd.index("--aging") + 1] == "srtt"
    assert cmd[cmd.index("--mss") + 1] == "1000"
    assert cmd[cmd.index("--duration") + 1] == "20.000"
    cmds = tcpcm_host_commands("10.0.1.254")
    assert "sysctl -qw net.ipv4.tcp_slow_start_after_idle=0" in cmds
    assert cmds[-1] == f"ip route change default via 10.0.1.254 initcwnd {TCPCM_INITCWND}"


def test_audio_runs_its_tcpcm_neighbour_on_one_cm() -> None:
    """Fig. 10: audio and TCP/CM to one receiver are one macroflow, so on BMv2 the audio
    app's process runs the TCP/CM connections on its CM."""
    from fairgate_exp.engines.bmv2 import cm_shared_hosts

    plan = load(EXPERIMENTS_DIR / "cm-audio.toml")
    lab_topology(plan)
    assert cm_shared_hosts(plan) == {"tcpcm": "voice"}
    voice, tcpcm = plan.cm
    cmd = cm_command(plan, voice, 1.0, Path("/tmp/v.jsonl"), "fg_cm", (tcpcm, Path("/tmp/t.jsonl")))
    assert cmd[2] == "fairgate_hosts.apps.audio"
    assert cmd[cmd.index("--tcp-flows") + 1] == "1"
    assert cmd[cmd.index("--tcp-log") + 1] == "/tmp/t.jsonl"
    assert cmd[cmd.index("--kernel-cc") + 1] == "fg_cm"
    # the paper's audio sends 1 KB packets: full data packets at the layer's rate
    assert "--full-packets" in cmd and voice.full_packets


def test_kernel_tcp_holds_become_sender_delay_lines(tmp_path: Path) -> None:
    """Kernel TCP cannot hold its acks: a file's ``hold`` (and TCP/CM's receiver
    ``ack_delay``) is a delay line of half the RTT on the sender's access link, only when
    every kernel TCP sender can have one (so compared flows share one emulation)."""
    from fairgate_exp.engines.bmv2 import held_access_delays, receiver_holds, tcp_hold_note

    plan = load(EXPERIMENTS_DIR / "cm-aging.toml")
    assert held_access_delays(plan) == {"t1": pytest.approx(0.06)}
    topo = lab_topology(plan)
    assert topo.hosts["t1"].delay_ms == pytest.approx(60.0)
    assert topo.hosts["r1"].delay_ms is None and topo.hosts["h1"].delay_ms is None
    assert "t1 60 ms" in (tcp_hold_note(plan) or "")
    # TCP/CM's RTT is its receiver's ack_delay (the simulator's TCP/CM sink holds it)
    friendly = held_access_delays(load(EXPERIMENTS_DIR / "cm-tcp-friendly.toml"))
    assert friendly == {"h1": pytest.approx(0.06), "h2": pytest.approx(0.06)}
    # a sender that also sends UDP to a receiver agent holding as long: the line carries
    # the whole RTT and that agent holds nothing more (Fig. 10: audio and TCP/CM on h1)
    audio = load(EXPERIMENTS_DIR / "cm-audio.toml")
    assert held_access_delays(audio) == {"h1": pytest.approx(0.06), "h2": pytest.approx(0.06)}
    assert receiver_holds(audio) == {"r1": 0.0, "r3": pytest.approx(0.12)}
    web = load(EXPERIMENTS_DIR / "cm-web.toml")
    assert set(held_access_delays(web)) == {"h1", "h2", "x1", "x2"}
    assert receiver_holds(web) == {"r1": 0.0, "r2": 0.0}
    base = """switches = ["s1"]
hosts = [{ name = "h1", switch = "s1" }, { name = "h2", switch = "s1" },
  { name = "r1", switch = "s1", capacity = "1Mbit/s" }]
[experiment]
algorithms = ["none"]
"""
    tcp = '{{ name = "{n}", src = "{s}", dst = "r1", kind = "bulk", size = "1000MB", '
    tcp += 'hold = "{h}" }}'
    path = tmp_path / "h.toml"
    two = ", ".join(tcp.format(n=f"t{i}", s=f"h{i}", h=h) for i, h in ((1, "40ms"), (2, "40ms")))
    path.write_text(f"tcp = [{two}]\n" + base)
    assert held_access_delays(load(path)) == {"h1": pytest.approx(0.02), "h2": pytest.approx(0.02)}
    # one host, two holds: one line cannot give both
    mixed = ", ".join(tcp.format(n=f"t{h}", s="h1", h=h) for h in ("40ms", "80ms"))
    path.write_text(f"tcp = [{mixed}]\n" + base)
    assert held_access_delays(load(path)) == {}
    # UDP to a receiver holding other than the sender's TCP hold: no line can give both
    udp = '\nflows = [{ name = "u", src = "h1", dst = "r1", max_rate = "100kbit/s" }]\n'
    r1 = '{ name = "r1", switch = "s1", capacity = "1Mbit/s" }'
    held40 = '{ name = "r1", switch = "s1", capacity = "1Mbit/s", ack_delay = "40ms" }'
    path.write_text(f"tcp = [{two}]{udp}" + base)
    assert held_access_delays(load(path)) == {}
    assert "not emulated" in (tcp_hold_note(load(path)) or "")
    path.write_text(f"tcp = [{two}]{udp}" + base.replace(r1, held40))
    assert held_access_delays(load(path)) == {"h1": pytest.approx(0.02), "h2": pytest.approx(0.02)}
    assert receiver_holds(load(path)) == {"r1": 0.0}
    # ... unless every UDP sender to that receiver has the same line (h3 has none)
    three = udp.replace("]", ', { name = "v", src = "h3", dst = "r1", max_rate = "1kbit/s" }]')
    h3 = base.replace(
        '{ name = "h2", switch = "s1" },',
        '{ name = "h2", switch = "s1" }, { name = "h3", switch = "s1" },',
    )
    path.write_text(f"tcp = [{two}]{three}" + h3.replace(r1, held40))
    assert held_access_delays(load(path)) == {}
    assert receiver_holds(load(path)) == {"r1": pytest.approx(0.04)}
    # no hold: no line, no note
    path.write_text(f"tcp = [{tcp.format(n='t', s='h1', h='0ms')}]\n" + base)
    assert held_access_delays(load(path)) == {} and tcp_hold_note(load(path)) is None


def test_bulk_flows_leave_from_fixed_ports_in_distinct_ficcrd_slots() -> None:
    """Each host's k-th bulk flow leaves from TCP_SPORT_BASE + k, so the FICCRD lab's flows
    are the same 5-tuples in every run, and they hold distinct slots at their source edge
    (two flows in one slot evict each other on every packet: docs/ficcrd.md, "Flows")."""
    from fairgate_exp.engines.bmv2 import TCP_SPORT_BASE, Bmv2Engine
    from fairgate_p4 import generated as g
    from fairgate_sim.ficcrd import flow_key

    plan = load(EXPERIMENTS_DIR / "ficcrd.toml", "smoke")
    eng = Bmv2Engine()
    h1, h2 = plan.tcp[0], plan.tcp[1]
    assert eng.bulk_sport(h1) == eng.bulk_sport(h2) == TCP_SPORT_BASE
    eng.bulk["h1"] = h1
    assert (eng.bulk_sport(h1), eng.bulk_sport(h2)) == (TCP_SPORT_BASE + 1, TCP_SPORT_BASE)
    slots = {
        (
            plan.hosts[f.src].switch,
            g.FG_FICCRD_FLOW_MASK
            & flow_key(plan.hosts[f.src].ip, plan.hosts[f.dst].ip, TCP_SPORT_BASE, 5001),
        )
        for f in plan.tcp
    }
    assert len(slots) == len(plan.tcp) == 10


def test_frame_size_note_names_tcp_frames_other_than_the_data_frame(tmp_path: Path) -> None:
    """BMv2 serves a bit/s capacity as packets/s of the data frame: kernel TCP frames of
    another size get another byte rate there than in the simulator, and the note says so,
    with the mss that matches; matched frames (or no limited port) give no note."""
    from fairgate_exp.engines.bmv2 import frame_size_note

    base = """switches = ["s1"]
hosts = [{ name = "h1", switch = "s1" }, { name = "h2", switch = "s1" },
  { name = "r1", switch = "s1", capacity = "CAP" }]
[experiment]
algorithms = ["none"]
payload = "PAYLOAD"
"""
    tcp = 'tcp = [{ name = "t1", src = "h1", dst = "r1", kind = "bulk", size = "1000MB"MSS }]\n'
    cm = 'cm = [{ name = "c", src = "h2", dst = "r1", app = "tcp", flows = 1, size = "1000MB" }]\n'
    path = tmp_path / "f.toml"

    def note(payload: str, mss: str = "", cap: str = "1Mbit/s", extra: str = "") -> str | None:
        text = tcp.replace("MSS", mss) + extra
        text += base.replace("PAYLOAD", payload).replace("CAP", cap)
        path.write_text(text)
        return frame_size_note(load(path))

    # the default payload (1200 B: 1242 B frames) beside mss 1448 (1514 B frames)
    text = note("1200B") or ""
    assert "1242 B data frame" in text and "t1 (mss 1448 B: 1514 B frames, 1.22x)" in text
    assert 'mss = "1176B"' in text
    # TCP/CM's connections are kernel TCP too, named beside the generator of their mss
    text = note("1200B", extra=cm) or ""
    assert "t1, c (mss 1448 B" in text
    # frames that match (1176 + 66 = 1200 + 42), or within 3 %: nothing to say
    assert note("1200B", ', mss = "1176B"') is None
    assert note("1448B") is None  # 1490 against 1514 B: 1.6 %
    cm976 = cm.replace("flows = 1", 'mss = "976B", flows = 1')
    assert note("1000B", ', mss = "976B"', extra=cm976) is None
    # one of two senders off: only it is named
    text = note("1000B", ', mss = "976B"', extra=cm) or ""
    assert "c (mss 1448 B: 1514 B frames, 1.45x)" in text and "t1" not in text
    # no limited port: BMv2 queues run at line rate, nothing is converted
    path.write_text(
        tcp.replace("MSS", "") + base.replace(', capacity = "CAP"', "").replace("PAYLOAD", "1200B")
    )
    assert frame_size_note(load(path)) is None
    # the shipped files that compare TCP with other traffic on BMv2 match their frames
    for name in ("cm-aging", "cm-audio", "cm-web", "cm-tcp-friendly", "cm-tcp-trace"):
        assert frame_size_note(load(EXPERIMENTS_DIR / f"{name}.toml")) is None, name


def test_kernel_tcp_commands_carry_the_files_mss() -> None:
    """tcp[].mss reaches kernel TCP on BMv2 (it was the simulator's alone): the bulk
    uploads and the short-flow client set it, and their parsers accept what is passed."""
    from fairgate_exp.engines.bmv2 import bulk_command, tcp_client_command
    from fairgate_hosts.apps.tcp_cm import build_parser as bulk_parser
    from fairgate_hosts.traffic.client import build_parser as client_parser

    audio = load(EXPERIMENTS_DIR / "cm-audio.toml")
    gen = next(g for g in audio.tcp if g.name == "newreno")
    cmd = bulk_command(audio, gen, 40000, 199.0)
    assert cmd[cmd.index("--mss") + 1] == "976" and cmd[cmd.index("--sport") + 1] == "40000"
    assert bulk_parser().parse_args(cmd[3:]).mss == 976
    sc = load(EXPERIMENTS_DIR / "session-control.toml", "lab")
    gen = sc.tcp[0]
    cmd = tcp_client_command(sc, gen, 0.0)
    assert cmd[cmd.index("--mss") + 1] == str(gen.mss)
    assert client_parser().parse_args(cmd[3:]).mss == gen.mss
