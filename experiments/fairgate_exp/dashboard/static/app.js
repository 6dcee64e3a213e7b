// FairGate dashboard: reads /api/meta once, then the run's events over Server-Sent Events
// (/api/stream) and draws them with uPlot. No framework. window.fg exposes the state the
// browser tests read (what the charts were given to draw).
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token");
  const q = (path) => path + (token ? (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : "");
  const $ = (id) => document.getElementById(id);
  const COLORS = ["#2e86c1", "#c0392b", "#27ae60", "#8e44ad", "#d68910", "#16a085", "#2c3e50", "#e84393"];
  const fg = { meta: null, store: {}, algo: null, kinds: {}, charts: {}, updates: 0, events: 0, state: null, redrawMs: [] };
  window.fg = fg;
  let dirty = false;

  const algoStore = (algo) => fg.store[algo] || (fg.store[algo] = { ports: {}, flows: { t: [], idx: new Map(), s: {} } });
  const portStore = (st, label) => st.ports[label] || (st.ports[label] = {
    t: [], r: [], y: [], c: [], q: [], qref: [], drops: [], state: {}, util: [], rec: [] });
  // the algorithm's internal-state charts of this algorithm (meta.state_charts, by kind)
  const stateCharts = (algo) => (fg.meta.state_charts[fg.kinds[algo] ?? fg.meta.kinds[algo]] || []);

  function ingest(ev) {
    fg.events++;
    if (ev.k === "algo") { fg.kinds[ev.algo] = ev.kind; addTab(ev.algo); if (!fg.algo) selectAlgo(ev.algo); return; }
    if (ev.k === "done") { fg.summary = ev.summary; $("status").textContent = "run finished"; dirty = true; return; }
    const st = algoStore(ev.algo);
    if (ev.k === "port") {
      const p = portStore(st, ev.port);
      p.t.push(ev.t); p.r.push(ev.r_mbps); p.y.push(ev.y_mbps); p.c.push(ev.c_mbps);
      p.q.push(ev.queue_pkts); p.qref.push(fg.meta.q_ref_pkts); p.drops.push(ev.drops);
      p.util.push(ev.util); p.rec.push(ev.rec);
      const n = p.t.length - 1;
      for (const [key, val] of Object.entries(ev.state || {})) (p.state[key] || (p.state[key] = []))[n] = val;
    } else if (ev.k === "flow") {
      const f = st.flows;
      let i = f.idx.get(ev.t);
      if (i === undefined) { i = f.t.length; f.t.push(ev.t); f.idx.set(ev.t, i); }
      const s = f.s[ev.flow] || (f.s[ev.flow] = { mbps: [], pps: [] });
      s.mbps[i] = ev.mbps; s.pps[i] = ev.pps;
    }
    if (ev.algo === fg.algo) dirty = true;
  }

  // ---- time-axis marks: phases shaded, joins (+) and leaves (-) as lines ----------------
  function marks() {
    return { hooks: { draw: [(u) => {
      const ctx = u.ctx, b = u.bbox, m = fg.meta;
      ctx.save(); ctx.font = `${10 * devicePixelRatio}px sans-serif`;
      for (const ph of m.phases) {
        const x0 = u.valToPos(ph.t0, "x", true), x1 = u.valToPos(ph.t1, "x", true);
        ctx.fillStyle = "rgba(46,134,193,0.07)"; ctx.fillRect(x0, b.top, x1 - x0, b.height);
      }
      for (const f of m.flows) {
        for (const [t, col, sign] of [[f.start, "#27ae60", "+"], [f.stop, "#c0392b", "−"]]) {
          if (t <= 0 || t >= m.duration_s) continue;
          const x = u.valToPos(t, "x", true);
          ctx.strokeStyle = col; ctx.setLineDash([4, 3]); ctx.beginPath();
          ctx.moveTo(x, b.top); ctx.lineTo(x, b.top + b.height); ctx.stroke();
          ctx.fillStyle = col; ctx.fillText(sign + f.name, x + 2, b.top + 10 * devicePixelRatio);
        }
      }
      ctx.restore();
    }] } };
  }

  function chart(id, el, title, series, ylabel, axes) {
    const opts = {
      title, width: Math.max(420, el.clientWidth - 10), height: 190, plugins: [marks()],
      cursor: { points: { show: false } },
      scales: { x: { time: false, range: [0, fg.meta.duration_s] } },
      axes: [{ label: "t (s)" }, ...(axes || [{ label: ylabel }])],
      series: [{ label: "t" }, ...series],
    };
    const data = [[], ...series.map(() => [])];
    const u = new uPlot(opts, data, el);
    fg.charts[id] = u;
    return u;
  }

  function buildPorts() {
    const box = $("ports"); box.innerHTML = ""; fg.charts = {};
    for (const p of fg.meta.ports) {
      const card = document.createElement("div"); card.className = "panel port";
      card.innerHTML = `<h2><span>${p.label}</span><small>capacity ${p.capacity_mbps.toFixed(3)} Mbit/s</small></h2>`;
      const a = document.createElement("div"), b = document.createElement("div");
      card.append(a, b); box.append(card);
      chart("rate:" + p.label, a, "fair / explicit rate R, arrival y, capacity C", [
        { label: "R", stroke: "#c0392b", width: 2 }, { label: "y", stroke: "#2e86c1" },
        { label: "C", stroke: "#7f8c8d", dash: [6, 4] }], "Mbit/s");
      chart("queue:" + p.label, b, "queue against q_ref; drops per period", [
        { label: "queue (pkt)", stroke: "#8e44ad", width: 2 }, { label: "q_ref", stroke: "#7f8c8d", dash: [6, 4] },
        { label: "drops", stroke: "#d35400", paths: uPlot.paths.bars ? uPlot.paths.bars({ size: [0.6, 4] }) : undefined }], "packets");
      const charts = stateCharts(fg.algo);
      if (!charts.length) {
        const c = document.createElement("div"); card.append(c);
        chart("state:" + p.label, c, "controller state (none for this algorithm)", [{ label: "-", stroke: "#16a085" }], "");
      }
      charts.forEach((sc, j) => {
        const c = document.createElement("div"); card.append(c);
        const scales = [...new Set(sc.series.map((x) => x[2]))];
        const series = sc.series.map(([, label, scale, gaps], i) => ({ label, scale, stroke: COLORS[(i + 5) % COLORS.length], width: 2, spanGaps: gaps !== "gaps" }));
        const axes = scales.map((sc2, i) => ({ scale: sc2, side: i ? 1 : 3, grid: { show: !i }, size: 70,
          label: (sc.axes || {})[sc2] || sc.series.filter((x) => x[2] === sc2).map((x) => x[1]).join(", ") }));
        chart(`state:${p.label}:${j}`, c, sc.title, series, "", axes);
      });
    }
    const fl = $("flows-chart"); fl.innerHTML = "";
    const series = [];
    fg.meta.flows.forEach((f, i) => {
      const col = COLORS[i % COLORS.length];
      series.push({ label: f.name, stroke: col, width: 2, points: { show: false } });
      series.push({ label: f.name + " max-min", stroke: col, dash: [5, 4], points: { show: false },
        show: fg.meta.flows.length <= 16 });
    });
    chart("flows", fl, "", series, "Mbit/s");
    const sel = $("eq-port"); sel.innerHTML = "";
    for (const p of fg.meta.ports) sel.append(new Option(p.label, p.label));
  }

  function maxminAt(t, name) {
    for (const s of fg.meta.segments) if (t > s.t0 && t <= s.t1) return s.maxmin_mbps[name] ?? null;
    return null;
  }

  function redraw() {
    if (!dirty || !fg.algo) return;
    dirty = false; fg.updates++;
    const t0 = performance.now();
    const st = algoStore(fg.algo);
    for (const p of fg.meta.ports) {
      const s = st.ports[p.label] || portStore(st, p.label);
      fg.charts["rate:" + p.label].setData([s.t, s.r, s.y, s.c]);
      fg.charts["queue:" + p.label].setData([s.t, s.q, s.qref, s.drops]);
      stateCharts(fg.algo).forEach((sc, j) => {
        fg.charts[`state:${p.label}:${j}`].setData([s.t, ...sc.series.map(([key]) => {
          const a = s.state[key] || [];
          return s.t.map((_, i) => (a[i] === undefined ? null : a[i]));
        })]);
      });
    }
    const f = st.flows, data = [f.t];
    for (const fl of fg.meta.flows) {
      const s = f.s[fl.name];
      data.push(f.t.map((_, i) => (s && s.mbps[i] !== undefined ? s.mbps[i] : null)));
      data.push(f.t.map((t) => (t >= fl.start && t <= fl.stop ? maxminAt(t, fl.name) : null)));
    }
    fg.charts.flows.setData(data);
    drawTopo(); drawEquation(); drawSummary();
    fg.redrawMs.push(performance.now() - t0);  // the benchmark reads these
    if (fg.redrawMs.length > 2000) fg.redrawMs.shift();
  }

  // ---- topology --------------------------------------------------------------------------
  function drawTopo() {
    const m = fg.meta, svg = $("topo"), W = 520, H = 260;
    const pos = {}, n = m.switches.length;
    m.switches.forEach((s, i) => {
      pos[s] = n <= 3 ? [W * (i + 1) / (n + 1), H / 2]
        : [W / 2 + 0.33 * W * Math.cos(2 * Math.PI * i / n), H / 2 + 0.36 * H * Math.sin(2 * Math.PI * i / n)];
    });
    const byS = {};
    for (const h of m.hosts) (byS[h.switch] = byS[h.switch] || []).push(h.name);
    for (const [s, hs] of Object.entries(byS)) {
      const [sx, sy] = pos[s], out = Math.atan2(sy - H / 2, sx - W / 2 + (n <= 3 ? (sx < W / 2 ? 1 : -1) * 1e-3 : 0));
      hs.forEach((h, j) => {
        const a = (n <= 3 ? (sx <= W / 2 ? Math.PI : 0) : out) + (j - (hs.length - 1) / 2) * Math.min(0.45, 2.6 / hs.length);
        pos[h] = [sx + 70 * Math.cos(a), sy + 70 * Math.sin(a)];
      });
    }
    const t = lastT();
    const seg = m.segments.find((s) => t > s.t0 && t <= s.t1) || m.segments[0];
    const hot = new Set(seg ? seg.bottlenecks : []);
    let out = "";
    for (const h of m.hosts) out += `<line class="hostlink" x1="${pos[h.name][0]}" y1="${pos[h.name][1]}" x2="${pos[h.switch][0]}" y2="${pos[h.switch][1]}"/>`;
    for (const l of m.links) {
      const b = hot.has(`${l.a}->${l.b}`) || hot.has(`${l.b}->${l.a}`);
      out += `<line class="link${b ? " bottleneck" : ""}" data-link="${l.a}-${l.b}" x1="${pos[l.a][0]}" y1="${pos[l.a][1]}" x2="${pos[l.b][0]}" y2="${pos[l.b][1]}"/>`;
    }
    for (const h of m.hosts) out += `<circle class="host" r="6" cx="${pos[h.name][0]}" cy="${pos[h.name][1]}"/><text x="${pos[h.name][0]}" y="${pos[h.name][1] - 9}">${h.name}</text>`;
    for (const s of m.switches) out += `<rect class="switch" x="${pos[s][0] - 16}" y="${pos[s][1] - 11}" width="32" height="22" rx="4"/><text x="${pos[s][0]}" y="${pos[s][1] + 4}" fill="#fff">${s}</text>`;
    svg.innerHTML = out;
  }

  function lastT() {
    const st = fg.store[fg.algo]; let t = 0;
    if (!st) return 0;
    for (const p of Object.values(st.ports)) if (p.t.length) t = Math.max(t, p.t[p.t.length - 1]);
    return t;
  }

  // ---- the last period's equation, with the controller's numbers ----------------------------
  const f3 = (x) => (x == null ? "–" : Number.isInteger(x) ? String(x) : Math.abs(x) >= 1000 || Math.abs(x) < 0.01 ? Number(x).toPrecision(5) : Number(x).toFixed(3));
  const v = (x) => `<span class="v">${f3(x)}</span>`;
  const mb = (bps) => (bps == null ? null : bps * 8 / 1e6);

  function drawEquation() {
    const st = fg.store[fg.algo], label = $("eq-port").value;
    const p = st && st.ports[label];
    const el = $("eq");
    if (!p || !p.rec.length) { el.textContent = "waiting for the first period…"; return; }
    const i = p.rec.length - 1, r = p.rec[i], prev = i > 0 ? p.rec[i - 1] : null;
    const k = fg.meta.constants[fg.algo] || {};
    const C = mb(r.capacity_Bps), y = mb(r.y_Bps), R = mb(r.rate_Bps), Rp = prev ? mb(prev.rate_Bps) : null;
    el.dataset.t = r.t; el.dataset.period = p.rec.length;
    let s = `${fg.algo.toUpperCase()} at ${label}, period #${p.rec.length} ending t = ${v(r.t)} s (rates in Mbit/s, queues in bytes)\n`;
    s += `C = ${v(C)}   y = ${v(y)}   measured queue ${v(r.queue_mean_bytes)} B   drops ${v(r.drop_pkts)}\n\n`;
    if (fg.algo === "xcp") {
      s += xcpEquation(p.rec, k);
    } else if ((fg.kinds[fg.algo] ?? fg.meta.kinds[fg.algo]) === "session") {
      s += sessionText(p.rec);
    } else if (r.idle) {
      s += `no arrivals this period: the outage rule (docs/reliability.md) holds R = ${v(R)}\n`;
      s += `instead of letting ${fg.algo.toUpperCase()} climb towards C while nobody sends.`;
    } else if (fg.algo === "qfcp") {
      const bqT = mb(k.beta * r.q_bytes / r.T_s);
      s += `q = virtual queue ${v(r.q_bytes)} B, T = ${v(r.T_s)} s\n`;
      s += `N = max(1, y / R(t−T)) = max(1, ${v(y)} / ${v(Rp)}) = ${v(r.N)}\n`;
      s += `R_raw = (C − β q / T) / N = (${v(C)} − ${k.beta} × ${v(r.q_bytes)} × 8e-6 / ${v(r.T_s)}) / ${v(r.N)}\n`;
      s += `      = (${v(C)} − ${v(bqT)}) / ${v(r.N)} = ${v(mb(r.R_raw_Bps))}\n`;
      s += `R = (R_raw + R(t−T)) / 2, clamped to [min, C] = (${v(mb(r.R_raw_Bps))} + ${v(Rp)}) / 2 → ${v(R)}`;
      if (r.warmup_capped_Bps != null) s += `\n(traffic just came back after an outage: R may fall, not rise, for a few periods → ${v(R)})`;
    } else if (fg.algo === "lestas") {
      const qref = fg.meta.q_ref_pkts * 1500;
      s += `e = y + q(t−1)/d − N̂(t−1)·p(t−1) = ${v(mb(r.estimator_error_Bps))}   (d = ${v(r.d_s)} s)\n`;
      s += `N̂ = N̂(t−1) + γ·e·p/(u² + p²), γ = ${k.gamma}  →  N̂ = ${v(r.N_hat)}\n`;
      s += `p = (C − (q − 2 q_ref) / d) / N̂ = (${v(C)} − (${v(r.q_persistent_bytes)} − 2 × ${v(qref)}) × 8e-6 / ${v(r.d_s)}) / ${v(r.N_hat)}\n`;
      s += `  = ${v((C - (r.q_persistent_bytes - 2 * qref) * 8e-6 / r.d_s) / r.N_hat)}, clamped to [min, C] → ${v(R)}`;
    } else if (fg.algo === "rcp") {
      s += `factor = 1 + (T/d)·(α(C − y) − β q / d) / C,  α = ${k.alpha}, β = ${k.beta}\n`;
      s += `       = 1 + ${v(r.T_over_d)} × (${k.alpha} × (${v(C)} − ${v(y)}) − ${k.beta} × ${v(r.q_bytes)} × 8e-6 / ${v(r.d_s)}) / ${v(C)} = ${v(r.factor)}\n`;
      s += `R = R(t−T) × factor = ${v(Rp)} × ${v(r.factor)}, clamped to [min, C] → ${v(R)}`;
    } else {
      s += "no rate algorithm: the switch only forwards and measures.";
    }
    el.innerHTML = s;
  }

  // XCP runs every average RTT d, not every period: its last update up to this period.
  function xcpEquation(recs, k) {
    let x = null;
    for (let i = recs.length - 1; i >= 0 && !x; i--) if (recs[i].xcp_phi_bytes != null) x = recs[i];
    if (!x) return "no XCP interval (one average RTT d) has ended yet at this port.";
    const d = x.xcp_d_s, y = x.xcp_y_Bps, C = x.capacity_Bps, Q = x.xcp_q_bytes, phi = x.xcp_phi_bytes;
    const sc = d / x.xcp_interval_s, sp = x.xcp_sum_rtt_s_over_cwnd * sc, sn = x.xcp_sum_s_bytes * sc;
    let s = `XCP's last interval ended in the period ending t = ${v(x.t)} s (bytes, bytes/s, seconds)\n`;
    s += `d = ${v(d)} s (mean RTT carried)   y = ${v(y)} B/s   C = ${v(C)} B/s   Q = ${v(Q)} B (persistent)\n\n`;
    s += `φ = α d S − β Q = ${k.alpha} × ${v(d)} × (${v(C)} − ${v(y)}) − ${k.beta} × ${v(Q)} = ${v(phi)} B\n`;
    s += `h = max(0, γ y d − |φ|) = max(0, ${k.gamma} × ${v(y)} × ${v(d)} − ${v(Math.abs(phi))}) = ${v(x.xcp_h_bytes)} B\n`;
    s += `ξp = (h + max(φ, 0)) / (d Σ rtt·s/cwnd) = (${v(x.xcp_h_bytes)} + ${v(Math.max(phi, 0))}) / (${v(d)} × ${sp > 0 ? v(sp) : `${v(d)} (no packet: one flow)`}) = ${v(x.xcp_xi_p)}\n`;
    s += `ξn = (h + max(−φ, 0)) / (d Σ s) = (${v(x.xcp_h_bytes)} + ${v(Math.max(-phi, 0))}) / (${v(d)} × ${v(sn)}) = ${v(x.xcp_xi_n)}${sn > 0 ? "" : " (no packet to charge)"}\n`;
    s += `(sums over one d: the interval's ${v(x.xcp_interval_s)} s scaled by d / interval)\n`;
    s += `each packet gets H_feedback = ξp rtt² s / cwnd − ξn rtt s bytes (min-stamped)`;
    return s;
  }

  // Session control decides once a measurement window, from the window's sums.
  function sessionText(recs) {
    const r = recs[recs.length - 1];
    let s = `this period: SYNs admitted ${v(r.syn_admitted)}, ungated ${v(r.syn_ungated)}, dropped ${v(r.syn_dropped)}; completions (FINs) ${v(r.completions ?? r.fins)}\n`;
    s += r.admit_fps == null ? "admit rate in force: none (no gating)\n" : `admit rate in force: ${v(r.admit_fps)} flows/s (the SYN meter's rate)\n`;
    let w = null;
    for (let i = recs.length - 1; i >= 0 && !w; i--) if (recs[i].window_completions_fps != null) w = recs[i];
    if (!w) return s + "no measurement window has ended yet at this port.";
    s += `\nlast window (ending t = ${v(w.t)} s): completion rate F = FINs / window = ${v(w.window_completions_fps)} flows/s,\n`;
    s += `admitted A = SYNs admitted / window = ${v(w.window_admitted_fps)} flows/s\n`;
    s += `the search (docs/session-control.md) then set the admit rate to ${w.admit_fps == null ? "none (no gating)" : v(w.admit_fps) + " flows/s"}`;
    return s;
  }

  // ---- windows table: means of what was drawn, beside max-min -------------------------------
  function drawSummary() {
    const st = fg.store[fg.algo]; if (!st) return;
    const f = st.flows, rows = ["<tr><th>window</th><th>flow / port</th><th>mean drawn</th><th>max-min</th></tr>"];
    const now = lastT();
    for (const { name, t0, t1, maxmin_pps } of fg.meta.windows) {
      if (!fg.summary && t1 > now) continue;  // a window is shown once it is over
      for (const fl of fg.meta.flows) {
        if (!(fl.start <= t0 && fl.stop >= t1)) continue;
        const s = f.s[fl.name]; if (!s) continue;
        let sum = 0, n = 0;
        f.t.forEach((t, i) => { if (t > t0 && t <= t1 && s.pps[i] !== undefined) { sum += s.pps[i]; n++; } });
        if (!n) continue;
        const mean = Math.round(sum / n * 100) / 100, mm = maxmin_pps[fl.name] ?? null;
        rows.push(`<tr data-window="${name}" data-flow="${fl.name}" data-mean="${mean}" data-maxmin="${mm}"><td>${name}</td><td>${fl.name}</td><td>${mean.toFixed(2)}</td><td>${mm == null ? "–" : mm.toFixed(2)}</td></tr>`);
      }
      for (const p of fg.meta.ports) {
        const s = st.ports[p.label]; if (!s) continue;
        let sum = 0, n = 0;
        s.t.forEach((t, i) => { if (t > t0 && t <= t1) { sum += s.util[i]; n++; } });
        if (!n) continue;
        const u = Math.round(sum / n * 1e4) / 1e4;
        rows.push(`<tr data-window="${name}" data-port="${p.label}" data-util="${u}"><td>${name}</td><td>${p.label}</td><td>util ${u.toFixed(4)}</td><td></td></tr>`);
      }
    }
    $("summary-table").innerHTML = rows.join("");
  }

  // ---- algorithms, controls, stream -------------------------------------------------------
  function addTab(algo) {
    if (document.querySelector(`#algo-tabs [data-algo="${algo}"]`)) return;
    const b = document.createElement("button"); b.textContent = algo; b.dataset.algo = algo;
    b.onclick = () => selectAlgo(algo); $("algo-tabs").append(b);
  }
  function selectAlgo(algo) {
    fg.algo = algo;
    for (const b of document.querySelectorAll("#algo-tabs button")) b.classList.toggle("on", b.dataset.algo === algo);
    buildPorts(); dirty = true; redraw();
  }

  async function control(action) {
    const speed = parseFloat($("speed").value);
    const r = await fetch(q("api/control"), { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ action, speed: Number.isFinite(speed) ? speed : null }) });
    const body = await r.json();
    if (!r.ok) $("status").textContent = body.error; else showState({ ...fg.state, gate: body });
  }

  function showState(s) {
    fg.state = s;
    const mode = $("mode");
    const paused = s.gate && s.gate.paused;
    mode.textContent = s.live ? (s.done ? "LIVE · finished" : paused ? "LIVE · paused" : "LIVE") : "REPLAY";
    mode.className = "badge" + (s.live && !s.done ? (paused ? " paused" : " live") : "");
    $("controls").hidden = !s.steppable || s.done;
    if (s.gate) { $("sim-time").textContent = s.gate.sim_t.toFixed(3); $("periods").textContent = s.gate.periods; }
    else $("sim-time").textContent = lastT().toFixed(3);
  }

  async function start() {
    fg.meta = await (await fetch(q("api/meta"))).json();
    $("title").textContent = `${fg.meta.experiment}: ${fg.meta.title}` + (fg.meta.run ? ` · ${fg.meta.run}` : "");
    showState(fg.meta.state);
    if (fg.meta.state.gate) $("speed").value = fg.meta.state.gate.speed;
    $("btn-pause").onclick = () => control("pause");
    $("btn-step").onclick = () => control("step");
    $("btn-resume").onclick = () => control("resume");
    $("speed").onchange = () => control("speed");
    $("eq-port").onchange = () => drawEquation();
    const es = new EventSource(q("api/stream"));
    es.onmessage = (m) => { for (const ev of JSON.parse(m.data)) ingest(ev); };
    es.addEventListener("state", (m) => {
      const s = JSON.parse(m.data); showState(s);
      if (s.done) es.close();
    });
    es.onerror = () => { if (fg.state && fg.state.done) es.close(); };
    // redraw at most every 200 ms; with many charts (16 ports = 49 charts) every 400 ms
    const every = fg.meta.ports.length > 8 ? 400 : 200;
    const tick = () => { redraw(); setTimeout(() => requestAnimationFrame(tick), every); };
    tick();
  }
  start().catch((e) => { $("status").textContent = "error: " + e; });
})();
