"""The simulator's copy of the BMv2 lab's FICCRD network (sim/fairgate_sim/labdata/,
read without importing the lab) is the network the lab builds."""

from __future__ import annotations

from fairgate_sim.topo import from_lab


def test_ficcrd_labdata_and_scenario_are_the_labs() -> None:
    """The simulator's copy of the lab's FICCRD network, constants and summary code."""
    import inspect
    from dataclasses import replace

    from fairgate_sim import ficcrd_lab
    from fairgate_sim import ficcrd_scenario as sim_mod
    from fairgate_topo.scenarios import ficcrd as lab_mod

    lab = lab_mod.Ficcrd().topology(False)
    want = from_lab(lab)
    for name, host in lab.hosts.items():
        if host.delay_ms:
            hs = want.topo.hosts[name]
            key = (hs.switch, hs.port)
            want.ports[key] = replace(want.ports[key], delay_s=host.delay_ms / 1000)
            want.uplinks[name] = replace(want.uplinks[name], delay_s=host.delay_ms / 1000)
    assert ficcrd_lab.lab_network() == (want, lab.link("s1", "s2").a_port)
    for const in ("FLOWS", "QUEUE_PPS", "DEPTH", "Q0", "MSS", "FRAME", "SAMPLE_S", "BASE_PINGS"):
        assert getattr(sim_mod, const) == getattr(lab_mod, const), const
    assert sim_mod.FICCRD_KEYS == lab_mod.FICCRD_KEYS
    for smoke in (False, True):
        assert sim_mod.Ficcrd().timing(smoke) == lab_mod.Ficcrd().timing(smoke)
        assert sim_mod.Ficcrd().scaling(smoke) == lab_mod.Ficcrd().scaling(smoke)
    for fn in (
        "access_delays_ms",
        "fair_kbps",
        "port_columns",
        "ficcrd_totals",
        "summarize_run",
        "rtt_unfairness",
        "net_drops",
        "retrans_after",
        "median_after",
        "quantile",
    ):
        assert inspect.getsource(getattr(sim_mod, fn)) == inspect.getsource(getattr(lab_mod, fn))
