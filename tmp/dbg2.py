import sys, math, random
from pathlib import Path
import fairgate_sim.switch as sw
from fairgate_p4 import xcp_standin as xs
mode = sys.argv[1]
if mode == "stoch":
    def fb(lp, ln, xp, xn):
        v = xs._term(lp, xp) - xs._term(ln, xn)
        return math.floor(v + random.random())
    sw.switch_feedback = fb
elif mode == "floor":
    def fb(lp, ln, xp, xn):
        return math.floor(xs._term(lp, xp) - xs._term(ln, xn))
    sw.switch_feedback = fb
from fairgate_exp.load import load
from fairgate_exp.engines.sim import SimEngine
plan = load("experiments/rtt-fairness.toml", sys.argv[2] if len(sys.argv) > 2 else None)
e = SimEngine(); e.build(plan, "xcp", Path("/tmp/xcp-cp-dbg"))
for f in plan.flows: e.start_flow(f)
prev = {}
for k in range(1, 21):
    e.advance(k * 1.0)
    line = f"t={k:3d} "
    for n, s in e.senders.items():
        a = s.core.stats.acked_bytes
        line += f"{n}={(a - prev.get(n, 0))/1158:6.1f}pps w={s.core.cwnd:6.1f} "
        prev[n] = a
    print(line)
