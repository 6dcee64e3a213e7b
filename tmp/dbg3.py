import sys
from pathlib import Path
from fairgate_exp.load import load
from fairgate_exp.engines.sim import SimEngine
plan = load(sys.argv[1], None)
e = SimEngine(); e.build(plan, "xcp", Path("/tmp/xcp-cp-dbg"))
for f in plan.flows:
    if f.start_s == 0: e.start_flow(f)
e.advance(float(sys.argv[2]))
recs = [r for r in e.ctl.xcp_records if r["y_Bps"] > 1e5]
for r in recs[-12:]:
    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
for n, s in e.senders.items():
    print(n, s.core.cwnd, s.core.rtt.srtt_us)
