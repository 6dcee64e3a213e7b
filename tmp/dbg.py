import sys
from pathlib import Path
from fairgate_exp.load import load
from fairgate_exp.engines.sim import SimEngine
exp = sys.argv[1]; algo = sys.argv[2] if len(sys.argv) > 2 else "xcp"
until = float(sys.argv[3]) if len(sys.argv) > 3 else 8
plan = load(exp, None)
e = SimEngine()
e.build(plan, algo, Path("/tmp/xcp-cp-dbg"))
for f in plan.flows:
    if f.start_s == 0:
        e.start_flow(f)
t = 0.0
while t < until:
    t += 0.2
    e.advance(t)
    line = f"t={t:4.1f} "
    for n, s in e.senders.items():
        c = s.core
        line += f"{n}: w={c.cwnd:6.1f} srtt={(c.rtt.srtt_us or 0)/1000:6.1f} loss={c.stats.losses} to={c.stats.timeouts} | "
    recs = [r for r in e.ctl.xcp_records if r["t"] > t - 0.2 and r["y_Bps"] > 0 and r["switch"] == "s1"]
    if recs:
        r = recs[-1]
        line += f"d={r['d_s']:.3f} y={r['y_Bps']/1e3:.0f}k q={r['q_bytes']:.0f} phi={r['phi_bytes']:.0f} xp={r['lg_xi_p']} xn={r['lg_xi_n']}"
    print(line)
