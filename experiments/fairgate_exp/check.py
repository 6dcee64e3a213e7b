"""Cross-checks the schema cannot express: names, references, times, ports, metrics."""

from __future__ import annotations

import difflib
from collections import Counter
from typing import Any

from fairgate_exp import units
from fairgate_exp.flows import instances
from fairgate_exp.schema import (
    TCP_METRICS,
    Agree,
    Expect,
    ExperimentFile,
    Measured,
    Selector,
)


def _err(msg: str) -> Exception:
    from fairgate_exp.load import ExperimentError

    return ExperimentError(msg)


def _near(name: str, known: list[str]) -> str:
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _dupes(kind: str, names: list[str]) -> None:
    for name, n in Counter(names).items():
        if n > 1:
            raise _err(f"{kind} {name!r} is defined {n} times")


def check(exp: ExperimentFile) -> None:
    _dupes("switch", exp.switches)
    _dupes("host", [h.name for h in exp.hosts])
    _dupes("node", exp.switches + [h.name for h in exp.hosts])
    _dupes("flow", flow_names(exp) + [t.name for t in exp.tcp] + cm_names(exp))
    _dupes("flow", flow_names(exp) + bulk_names(exp) + cm_names(exp))
    _dupes("phase", [p.name for p in exp.phases])
    switches, hosts = list(exp.switches), [h.name for h in exp.hosts]
    for i, h in enumerate(exp.hosts):
        if h.switch not in switches:
            raise _err(
                f"hosts[{i}] ({h.name}): unknown switch {h.switch!r}{_near(h.switch, switches)}"
            )
    pairs: set[frozenset[str]] = set()
    for i, link in enumerate(exp.links):
        for end in (link.a, link.b):
            if end not in switches:
                what = "a host (hosts attach with hosts[].switch)" if end in hosts else "unknown"
                raise _err(
                    f"links[{i}] ({link.a}-{link.b}): {end!r} is {what}{_near(end, switches)}"
                )
        if link.a == link.b:
            raise _err(f"links[{i}]: a link from {link.a} to itself")
        pair = frozenset((link.a, link.b))
        if pair in pairs:
            raise _err(f"links[{i}]: a second link between {link.a} and {link.b}")
        pairs.add(pair)
    adj: dict[str, set[str]] = {sw: set() for sw in switches}
    for link in exp.links:
        adj[link.a].add(link.b)
        adj[link.b].add(link.a)
    at = {h.name: h.switch for h in exp.hosts}
    duration = units.parse_time(exp.experiment.duration)
    warmup = units.parse_time(exp.experiment.warmup)
    if warmup >= duration:
        raise _err(
            f"experiment.warmup {exp.experiment.warmup} is not before the end ({duration:g} s)"
        )
    for kind, items in (("flows", exp.flows), ("tcp", exp.tcp), ("cm", exp.cm)):
        for i, f in enumerate(items):
            for end in (f.src, f.dst):
                if end not in hosts:
                    raise _err(f"{kind}[{i}] ({f.name}): unknown host {end!r}{_near(end, hosts)}")
            if f.src == f.dst:
                raise _err(f"{kind}[{i}] ({f.name}): src and dst are both {f.src}")
            if at[f.dst] not in _reach(adj, at[f.src]):
                raise _err(
                    f"{kind}[{i}] ({f.name}): no route from {f.src} ({at[f.src]}) "
                    f"to {f.dst} ({at[f.dst]}): no path of links"
                )
            start = units.parse_time(f.start)
            stop = duration if f.stop is None else units.parse_time(f.stop)
            if stop > duration:
                raise _err(
                    f"{kind}[{i}] ({f.name}): stop {f.stop} is after the end ({duration:g} s)"
                )
            if start >= stop:
                raise _err(f"{kind}[{i}] ({f.name}): start {f.start} is not before its stop")
        for i, a in enumerate(exp.cm):
            if a.weights is not None and len(a.weights) != a.flows:
                raise _err(f"cm[{i}] ({a.name}): {len(a.weights)} weights for {a.flows} flows")
            if a.app == "tcp" and a.flows < 1:
                raise _err(f"cm[{i}] ({a.name}): a tcp app needs flows >= 1")
            last = units.parse_time(a.start) + max(0, a.flows - 1) * units.parse_time(a.stagger)
            stop = duration if a.stop is None else units.parse_time(a.stop)
            if a.flows > 1 and last >= stop:
                raise _err(f"cm[{i}] ({a.name}): its last flow opens after it stops")
        for i, t in enumerate(exp.tcp):
            if t.kind == "poisson" and t.arrival_rate is None:
                raise _err(f"tcp[{i}] ({t.name}): a poisson generator needs arrival_rate")
    for i, p in enumerate(exp.phases):
        start = units.parse_time(p.start)
        end = duration if p.end is None else units.parse_time(p.end)
        if start >= duration or end > duration:
            raise _err(
                f"phases[{i}] ({p.name}): starts or ends after the end of the run ({duration:g} s)"
            )
        if start >= end:
            raise _err(f"phases[{i}] ({p.name}): start {p.start} is not before its end")
    phases = [p.name for p in exp.phases]
    flows = flow_names(exp) + cm_names(exp) + bulk_names(exp)
    variants = [v.name for v in exp.variants]
    _dupes("variant", variants)
    for i, e in enumerate(exp.expect):
        where = f"expect[{i}] ({e.metric})"
        _check_selectors(exp, where, e, flows, variants, phases)
        _check_bounds(exp, where, e)
    for i, m in enumerate(exp.measure.metrics):
        where = f"measure.metrics[{i}] ({m.metric})"
        _check_selectors(exp, where, m, flows, variants, phases)
        _check_measured(where, m)
    for i, a in enumerate(exp.agree):
        _check_agree(exp, f"agree[{i}] ({a.metric})", a, variants)
    check_scale_sets(exp)
    if exp.sweep is not None:
        doc = exp.model_dump(mode="json", exclude={"sweep"})
        for key, values in exp.sweep.grid.items():
            _check_path(doc, key)
            if not values:
                raise _err(f"sweep.grid.{key}: no values")
        first = next(iter(exp.sweep.grid.values()), [])
        distinct = len({str(v) for v in first}) == len(first) > 0
        for key, values in exp.sweep.zip.items():
            _check_path(doc, key)
            if not distinct or len(values) != len(first):
                raise _err(
                    f"sweep.zip.{key}: needs a [sweep.grid] whose first list has distinct "
                    f"values and as many as this one ({len(values)})"
                )


def _check_selectors(
    exp: ExperimentFile,
    where: str,
    e: Selector,
    flows: list[str],
    variants: list[str],
    phases: list[str],
) -> None:
    """What an expectation and a measured metric share: the names they select exist and
    the run records what the metric needs."""
    algos = set(exp.experiment.algorithms)
    if e.phase is not None and e.phase not in phases:
        raise _err(f"{where}: unknown phase {e.phase!r}{_near(e.phase, phases)}")
    for a in e.algorithms or []:
        if a not in algos:
            raise _err(f"{where}: algorithm {a!r} is not among experiment.algorithms")
    cm_apps = e.metric == "ratio" and e.of == "cm_loss"  # flows: CM app names
    for f in [] if cm_apps else e.flows or []:
        if f not in flows:
            raise _err(f"{where}: unknown flow {f!r}{_near(f, flows)}")
    if e.metric in ("maxmin", "flow_rate", "jain", "convergence"):
        if not exp.measure.flows:
            raise _err(f"{where}: flow rates are not recorded (measure.flows = false)")
        bulk = bulk_names(exp) and e.metric != "flow_rate"
        if not exp.flows and not bulk and not (e.metric == "flow_rate" and exp.cm):
            raise _err(f"{where}: there are no paced flows to measure")
    if e.metric == "flow_number" and "rcp" in (e.algorithms or algos):
        raise _err(f"{where}: rcp estimates no number of flows (qfcp: N, lestas: N-hat)")
    if e.metric == "goodput" and not bulk_names(exp):
        raise _err(f'{where}: there are no bulk TCP flows to measure (kind = "bulk")')
    if e.metric == "flow_rate" and (e.value is None or not e.flows):
        need = "flows, value and within" if isinstance(e, Expect) else "flows and value"
        raise _err(f"{where}: needs {need}")
    for v in e.variants or []:
        if v not in variants:
            raise _err(f"{where}: unknown variant {v!r}{_near(v, variants)}")
    if e.metric in (*TCP_METRICS, "settling") and not exp.tcp:
        raise _err(f"{where}: there are no TCP flows to measure (add [[tcp]])")
    if e.metric in TCP_METRICS:
        for v in e.versus or []:
            if v not in variants:
                raise _err(f"{where}: unknown variant {v!r} in versus{_near(v, variants)}")
        if e.versus is not None and not e.versus:
            raise _err(f"{where}: versus names the variants to compare with")
    _check_feasible(exp, where, e)
    if e.metric == "ratio":
        _check_ratio(exp, where, e.of, e.flows, e.ports, e.versus, flows)
    elif e.of != "flow_rate" or (e.versus is not None and e.metric not in TCP_METRICS):
        raise _err(
            f'{where}: of and versus belong to metric = "ratio" (versus also to '
            "completion_rate and fct: other variants)"
        )
    if e.metric == "queue" and e.target is None and "lestas" not in (e.algorithms or algos):
        raise _err(f"{where}: only lestas regulates the queue to q_ref (or give a target)")


def _check_feasible(exp: ExperimentFile, where: str, e: Selector) -> None:
    """``feasible`` filters completion_rate's ``versus`` (or settling's static gates) by
    their static admit rates."""
    if e.feasible is None:
        return
    if e.metric == "settling":
        return  # its references are the file's static gates (checked with settling)
    if e.metric != "completion_rate" or not e.versus:
        raise _err(f"{where}: feasible belongs to completion_rate with versus, or to settling")
    rates = {v.name: v.admit_rate for v in exp.variants}
    for v in e.versus:
        if rates.get(v) is None:
            raise _err(
                f"{where}: feasible compares static gates: versus variant {v!r} has no admit_rate"
            )


def _check_agree(exp: ExperimentFile, where: str, a: Agree, variants: list[str]) -> None:
    """An engines' agreement names a TCP generator and the file's variants."""
    gens = [t.name for t in exp.tcp]
    if not gens:
        raise _err(f"{where}: {a.metric} needs TCP flows ([[tcp]])")
    if a.tcp is None and len(gens) > 1:
        raise _err(f"{where}: name the TCP generator (tcp = one of {gens})")
    if a.tcp is not None and a.tcp not in gens:
        raise _err(f"{where}: unknown TCP generator {a.tcp!r}{_near(a.tcp, gens)}")
    for v in a.variants or a.best_of or []:
        if v not in variants:
            raise _err(f"{where}: unknown variant {v!r}{_near(v, variants)}")


def _check_bounds(exp: ExperimentFile, where: str, e: Expect) -> None:
    """An expectation judges: the tolerance or bounds its metric is judged by."""
    if e.metric in ("maxmin", "queue", "convergence") and e.within is None:
        raise _err(f'{where}: needs within (e.g. within = "10%")')
    if e.metric in ("utilisation", "jain", "goodput") and e.min is None:
        raise _err(f"{where}: needs min (e.g. min = 0.95)")
    if e.metric == "flow_number" and e.min is None and e.max is None:
        raise _err(f"{where}: needs min or max (the equivalent number of flows)")
    if e.metric == "drops" and e.max is None and e.min is None:
        raise _err(f"{where}: needs max (e.g. max = 0) or min")
    if e.metric == "flow_rate" and e.within is None:
        raise _err(f"{where}: needs flows, value and within")
    if e.metric in TCP_METRICS and e.min is None and e.max is None:
        raise _err(
            f"{where}: needs min or max (flows/s for completion_rate, s for fct and fct_arrived)"
        )
    if e.metric == "settling":
        _check_settling(exp, where, e)
    if e.metric == "ratio" and e.min is None and e.max is None:
        raise _err(f"{where}: needs min or max (e.g. min = 0.8, max = 1.25)")


def _check_measured(where: str, m: Measured) -> None:
    """A measured metric is recorded as the expectation of its selectors would measure
    it, never judged: no tolerance (but convergence's band), no settling (a judgement
    across variants)."""
    if m.metric == "settling":
        raise _err(f"{where}: settling is judged across variants; make it an [[expect]]")
    if m.metric == "convergence" and m.within is None:
        raise _err(f'{where}: needs within (the band that counts as converged, e.g. "10%")')
    if m.metric != "convergence" and m.within is not None:
        raise _err(
            f"{where}: within is a tolerance to judge by and a measured metric is not "
            "judged (only convergence takes within: its band); to judge it, make it an "
            "[[expect]]"
        )


def _check_settling(exp: ExperimentFile, where: str, e: Expect) -> None:
    """settling: a search judged against the file's static gates in one phase."""
    if not exp.tcp:
        raise _err(f"{where}: there are no TCP flows to measure (add [[tcp]])")
    if e.phase is None:
        raise _err(f"{where}: needs phase (the change it judges starts the phase)")
    if e.within is None or e.max is None:
        raise _err(f'{where}: needs within (e.g. "10%") and max (s to settle)')
    if not any(v.admit_rate is not None and v.session == "off" for v in exp.variants):
        raise _err(f"{where}: needs a static gate among the variants (admit_rate) as reference")
    judged = [v for v in exp.variants if v.name in e.variants] if e.variants else exp.variants
    if not any(v.session != "off" for v in judged):
        raise _err(f'{where}: judges no search variant (session = "strategy1" or "strategy2")')


def _check_ratio(
    exp: ExperimentFile,
    where: str,
    of: str,
    flows: list[str] | None,
    ports: list[str] | None,
    versus: list[str] | None,
    known: list[str],
) -> None:
    """A ratio names both sides: flows (of = flow_rate) or port labels (loss_rate)."""
    if not versus:
        raise _err(f"{where}: needs versus (the denominator's flows or ports)")
    if of == "flow_rate":
        if not flows or ports:
            raise _err(f"{where}: a flow_rate ratio needs flows (and no ports)")
        for f in versus:
            if f not in known:
                raise _err(f"{where}: unknown flow {f!r} in versus{_near(f, known)}")
        if not exp.measure.flows:
            raise _err(f"{where}: flow rates are not recorded (measure.flows = false)")
    elif of == "cm_loss":
        apps = {a.name: a for a in exp.cm}
        if not flows or ports:
            raise _err(f"{where}: a cm_loss ratio needs flows: CM app names (and no ports)")
        for f in list(flows) + list(versus):
            if f not in apps:
                raise _err(f"{where}: {f!r} is not a CM app{_near(f, list(apps))}")
            if apps[f].app == "tcp":
                raise _err(f"{where}: {f!r} is TCP/CM, which sends no probes")
    elif not ports or flows:
        raise _err(f"{where}: a loss_rate ratio needs ports (and no flows)")


def flow_names(exp: ExperimentFile) -> list[str]:
    """The paced flows' names (``count`` users and on/off flows' on-periods: ``<name>-1``,
    ``<name>-2`` ..; ``fairgate_exp.flows``)."""
    duration = units.parse_time(exp.experiment.duration)
    out = []
    for i, f in enumerate(exp.flows):
        out += [x.name for x in instances(f, duration, f"flows[{i}] ({f.name})")]
    return out


def bulk_names(exp: ExperimentFile) -> list[str]:
    """The recorded names of bulk TCP flows (goodput per flow): ``<name>`` or, with
    ``count`` > 1, ``<name>-1`` .. ``<name>-<count>``."""
    out = []
    for t in exp.tcp:
        if t.kind == "bulk" and t.transport == "tcp":
            out += [t.name] if t.count == 1 else [f"{t.name}-{k + 1}" for k in range(t.count)]
    return out


def cm_names(exp: ExperimentFile) -> list[str]:
    """The recorded names of the CM apps' flows."""
    out = []
    for a in exp.cm:
        out += [f"{a.name}-audio"] if a.app == "audio" else []
        out += [f"{a.name}-{i}" for i in range(a.flows)]
    return out


def _reach(adj: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nb in adj[todo.pop()] - seen:
            seen.add(nb)
            todo.append(nb)
    return seen


def _check_path(doc: Any, key: str, what: str = "sweep over") -> None:
    """``key`` (dotted; ``*`` for every element of a list) names fields of ``doc``."""
    here: Any = doc
    done: list[str] = []
    parts = key.split(".")
    for j, part in enumerate(parts):
        if isinstance(here, list):
            if part == "*":
                rest = ".".join(parts[j + 1 :])
                for item in here:
                    if rest:
                        _check_path(item, rest, what)
                return
            if not part.isdigit() or int(part) >= len(here):
                raise _err(
                    f"{what} unknown field {key!r}: {'.'.join(done)} has {len(here)} entries"
                )
            here = here[int(part)]
        elif isinstance(here, dict):
            if part not in here:
                raise _err(f"{what} unknown field {key!r}{_near(part, list(here))}")
            here = here[part]
        else:
            raise _err(f"{what} unknown field {key!r}: {'.'.join(done)} is a value")
        done.append(part)


def check_scale_sets(exp: ExperimentFile) -> None:
    """Every scale's ``extends`` names another scale (no cycle) and its ``set`` paths name
    fields of the file."""
    doc = exp.model_dump(mode="json", exclude={"sweep", "scales"})
    for name, sc in exp.scales.items():
        seen = [name]
        here = sc
        while here.extends is not None:
            if here.extends not in exp.scales:
                raise _err(
                    f"scales.{seen[-1]}.extends: unknown scale {here.extends!r}"
                    f"{_near(here.extends, list(exp.scales))}"
                )
            if here.extends in seen:
                raise _err(f"scales.{name}: extends itself ({' -> '.join([*seen, here.extends])})")
            seen.append(here.extends)
            here = exp.scales[here.extends]
        if here.factor is None:
            raise _err(f"scales.{name}: needs a factor (or extends a scale that has one)")
        for key in sc.set:
            if key.split(".")[0] in ("scales", "sweep"):
                raise _err(f"scales.{name}.set: {key!r} cannot change scales or the sweep")
            _check_path(doc, key, f"scales.{name}.set:")
