"""The topology file: switches, hosts, links and per-port capacities.

One JSON document (docs/topology-file.md has the full format)::

    {
      "switches": [{"name": "s1", "grpc_addr": "127.0.0.1:50001", "device_id": 0,
                    "thrift_port": 9090, "mac": "02:fa:00:00:00:01"}],
      "hosts": [{"name": "h1", "ip": "10.0.1.1", "mac": "00:00:00:00:01:01",
                 "switch": "s1", "port": 1, "capacity_kbps": 100000}],
      "links": [{"a": "s1:2", "b": "s2:1", "capacity_kbps": 10000,
                 "queue_rate_pps": 833, "queue_depth": 64, "admission": false}]
    }

Every switch port that leads somewhere has a capacity (the C of the rate
algorithms); ``queue_rate_pps``/``queue_depth`` are what the lab sets on BMv2
with Thrift (the real bottleneck); ``admission`` turns SYN gating on for the
host's port, or a link's ``a`` end (the data direction, as the queue settings).
Errors name the offending entry precisely.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_p4 import generated as g

_MAC = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$")
SWITCH_KEYS = frozenset({"name", "grpc_addr", "device_id", "thrift_port", "mac", "comment"})
PORT_KEYS = frozenset({"capacity_kbps", "queue_rate_pps", "queue_depth", "admission", "comment"})
HOST_KEYS = PORT_KEYS | {"name", "ip", "mac", "switch", "port"}
LINK_KEYS = PORT_KEYS | {"a", "b"}


class TopologyError(ValueError):
    """A topology file that cannot be used, with where and why."""


@dataclass(frozen=True)
class SwitchSpec:
    name: str
    grpc_addr: str
    device_id: int
    thrift_port: int | None
    mac: str


@dataclass(frozen=True)
class HostSpec:
    name: str
    ip: str
    mac: str
    switch: str
    port: int


@dataclass(frozen=True)
class PortSpec:
    """One switch port: where it leads and its capacity."""

    switch: str
    port: int
    peer: str  # a host name or "switch:port"
    capacity_Bps: float
    queue_rate_pps: int | None = None
    queue_depth: int | None = None
    admission: bool = False
    # Whether queue_rate_pps/queue_depth are set on this port's egress queue:
    # host ports and a link's "a" end (its data direction). A link's "b" end
    # carries the same values for reference but its queue is left alone, so
    # that acks do not meet a second bottleneck of the same packet rate.
    queue_end: bool = True

    @property
    def peer_switch(self) -> str | None:
        return self.peer.split(":")[0] if ":" in self.peer else None


@dataclass
class Topology:
    switches: dict[str, SwitchSpec] = field(default_factory=dict)
    hosts: dict[str, HostSpec] = field(default_factory=dict)
    ports: dict[tuple[str, int], PortSpec] = field(default_factory=dict)

    def switch_ports(self, switch: str) -> list[PortSpec]:
        return sorted((p for (s, _), p in self.ports.items() if s == switch), key=lambda p: p.port)

    def neighbours(self, switch: str) -> list[tuple[int, str]]:
        """(local port, neighbour switch) for every switch-to-switch link."""
        return [
            (p.port, p.peer_switch) for p in self.switch_ports(switch) if p.peer_switch is not None
        ]

    def to_json(self) -> dict[str, Any]:
        links, seen = [], set()
        for (s, port), spec in sorted(self.ports.items()):
            if spec.peer_switch is None or (s, port) in seen or not spec.queue_end:
                continue
            peer_sw, peer_port = spec.peer.split(":")
            seen.add((peer_sw, int(peer_port)))
            link: dict[str, Any] = {
                "a": f"{s}:{port}",
                "b": spec.peer,
                "capacity_kbps": spec.capacity_Bps * 8 / 1000,
            }
            for key in ("queue_rate_pps", "queue_depth"):
                if getattr(spec, key) is not None:
                    link[key] = getattr(spec, key)
            if spec.admission:
                link["admission"] = True
            links.append(link)
        hosts = []
        for h in self.hosts.values():
            spec = self.ports[(h.switch, h.port)]
            entry: dict[str, Any] = {
                "name": h.name,
                "ip": h.ip,
                "mac": h.mac,
                "switch": h.switch,
                "port": h.port,
                "capacity_kbps": spec.capacity_Bps * 8 / 1000,
            }
            for key in ("queue_rate_pps", "queue_depth"):
                if getattr(spec, key) is not None:
                    entry[key] = getattr(spec, key)
            if spec.admission:
                entry["admission"] = True
            hosts.append(entry)
        switches = [
            {
                "name": s.name,
                "grpc_addr": s.grpc_addr,
                "device_id": s.device_id,
                "thrift_port": s.thrift_port,
                "mac": s.mac,
            }
            for s in self.switches.values()
        ]
        return {"switches": switches, "hosts": hosts, "links": links}


def load(path: str | Path) -> Topology:
    """Read and check a topology file; every problem is one TopologyError line
    that names the file and the entry and field at fault."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TopologyError(f"{path}: no such topology file") from None
    except IsADirectoryError:
        raise TopologyError(f"{path}: is a directory, not a topology file") from None
    except OSError as exc:
        raise TopologyError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TopologyError(
            f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise TopologyError(f"{path}: not JSON: {exc}") from None
    except ValueError as exc:
        raise TopologyError(f"{path}: not JSON: {exc}") from None
    except RecursionError:
        raise TopologyError(f"{path}: not JSON: nested too deeply") from None
    try:
        return parse(doc)
    except TopologyError as exc:
        raise TopologyError(f"{path}: {exc}") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _check_keys(entry: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(str(k) for k in set(entry) - allowed)
    if unknown:
        raise TopologyError(
            f"{where}: unknown key(s) {', '.join(repr(k) for k in unknown)} "
            f"(allowed: {', '.join(sorted(allowed))})"
        )


def _section(doc: dict[str, Any], key: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise TopologyError(f"'{key}' must be a list, got {type(value).__name__} {value!r}")
    return value


def _check_grpc_addr(addr: str, where: str) -> str:
    """host:port with an IPv4 address, a host name or [IPv6], and a port 1..65535."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host:
        raise TopologyError(f"{where}: grpc_addr must be 'host:port', got {addr!r}")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise TopologyError(f"{where}: grpc_addr port must be 1..65535, got {addr!r}")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise TopologyError(f"{where}: grpc_addr has a bad IPv6 address {addr!r}") from None
    elif host.replace(".", "").isdigit():
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise TopologyError(f"{where}: grpc_addr has a bad IPv4 address {addr!r}") from None
    elif not _HOSTNAME.match(host):
        raise TopologyError(f"{where}: grpc_addr has a bad host name {addr!r}")
    return addr


def _get(entry: dict[str, Any], key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if key not in entry:
        raise TopologyError(f"{where}: missing '{key}'")
    value = entry[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise TopologyError(f"{where}: '{key}' has the wrong type ({value!r})")
    return value


def _capacity(entry: dict[str, Any], where: str) -> float:
    if "capacity_kbps" not in entry:
        raise TopologyError(f"{where}: missing capacity ('capacity_kbps')")
    cap = entry["capacity_kbps"]
    if (
        isinstance(cap, bool)
        or not isinstance(cap, int | float)
        or not math.isfinite(cap)
        or not cap > 0
    ):
        raise TopologyError(f"{where}: capacity_kbps must be a positive number, got {cap!r}")
    return float(cap) * 1000 / 8


def _optional_int(
    entry: dict[str, Any], key: str, where: str, lo: int = 0, hi: int | None = None
) -> int | None:
    value = entry.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < lo
        or (hi is not None and value > hi)
    ):
        span = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise TopologyError(f"{where}: '{key}' must be an integer {span}, got {value!r}")
    return value


def _optional_bool(entry: dict[str, Any], key: str, where: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise TopologyError(f"{where}: '{key}' must be true or false, got {value!r}")
    return value


def _name(entry: dict[str, Any], where: str) -> str:
    name = _get(entry, "name", where, str)
    if not name or not name.isprintable() or ":" in name:
        raise TopologyError(f"{where}: 'name' must be non-empty, printable, without ':'")
    return name


def _check_port(port: Any, where: str) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port < g.FG_MAX_PORTS:
        raise TopologyError(
            f"{where}: port must be an integer 1..{g.FG_MAX_PORTS - 1}, got {port!r}"
        )
    return port


def _check_mac(mac: Any, where: str) -> str:
    if not isinstance(mac, str) or not _MAC.match(mac):
        raise TopologyError(f"{where}: bad MAC address {mac!r}")
    return mac.lower()


def parse(doc: Any) -> Topology:
    if not isinstance(doc, dict):
        raise TopologyError("the top level must be an object with switches, hosts, links")
    unknown = set(doc) - {"switches", "hosts", "links", "comment"}
    if unknown:
        raise TopologyError(f"unknown top-level keys: {', '.join(sorted(unknown))}")
    topo = Topology()
    grpc_seen: dict[str, str] = {}
    for i, entry in enumerate(_section(doc, "switches")):
        where = f"switches[{i}]"
        if not isinstance(entry, dict):
            raise TopologyError(f"{where}: must be an object")
        _check_keys(entry, SWITCH_KEYS, where)
        name = _name(entry, where)
        where = f"switch {name!r}"
        if name in topo.switches:
            raise TopologyError(f"{where}: defined twice")
        addr = _check_grpc_addr(_get(entry, "grpc_addr", where, str), where)
        if addr in grpc_seen:
            raise TopologyError(f"{where}: grpc_addr {addr} is also {grpc_seen[addr]!r}'s")
        grpc_seen[addr] = name
        thrift = _optional_int(entry, "thrift_port", where, 1, 65535)
        device_id = _get(entry, "device_id", where, int)
        if not 0 <= device_id < 2**64:
            raise TopologyError(f"{where}: 'device_id' must be 0..2^64-1, got {device_id!r}")
        topo.switches[name] = SwitchSpec(
            name=name,
            grpc_addr=addr,
            device_id=device_id,
            thrift_port=thrift,
            mac=_check_mac(_get(entry, "mac", where, str), where),
        )
    if not topo.switches:
        raise TopologyError("no switches")

    def add_port(spec: PortSpec, where: str) -> None:
        if spec.switch not in topo.switches:
            raise TopologyError(f"{where}: unknown switch {spec.switch!r}")
        key = (spec.switch, spec.port)
        if key in topo.ports:
            other = topo.ports[key].peer
            raise TopologyError(
                f"{where}: duplicate port {spec.switch}:{spec.port} (already to {other})"
            )
        topo.ports[key] = spec

    ips: dict[str, str] = {}
    for i, entry in enumerate(_section(doc, "hosts")):
        where = f"hosts[{i}]"
        if not isinstance(entry, dict):
            raise TopologyError(f"{where}: must be an object")
        _check_keys(entry, HOST_KEYS, where)
        name = _name(entry, where)
        where = f"host {name!r}"
        if name in topo.hosts or name in topo.switches:
            raise TopologyError(f"{where}: name used twice")
        ip = _get(entry, "ip", where, str)
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            raise TopologyError(f"{where}: bad IPv4 address {ip!r}") from None
        if ip in ips:
            raise TopologyError(f"{where}: IP {ip} is also {ips[ip]!r}'s")
        ips[ip] = name
        switch = _get(entry, "switch", where, str)
        port = _check_port(_get(entry, "port", where, int), where)
        host = HostSpec(name, ip, _check_mac(_get(entry, "mac", where, str), where), switch, port)
        add_port(
            PortSpec(
                switch,
                port,
                name,
                _capacity(entry, where),
                _optional_int(entry, "queue_rate_pps", where),
                _optional_int(entry, "queue_depth", where, 1),
                _optional_bool(entry, "admission", where),
            ),
            where,
        )
        topo.hosts[name] = host

    for i, entry in enumerate(_section(doc, "links")):
        where = f"links[{i}]"
        if not isinstance(entry, dict):
            raise TopologyError(f"{where}: must be an object")
        _check_keys(entry, LINK_KEYS, where)
        ends = []
        for side in ("a", "b"):
            text = _get(entry, side, where, str)
            sw, sep, port_text = text.partition(":")
            if not sep or not port_text.isdigit():
                raise TopologyError(f"{where}: '{side}' must be 'switch:port', got {text!r}")
            ends.append((sw, _check_port(int(port_text), where)))
        cap = _capacity(entry, where)
        qrate = _optional_int(entry, "queue_rate_pps", where)
        qdepth = _optional_int(entry, "queue_depth", where, 1)
        admission = _optional_bool(entry, "admission", where)
        (a_sw, a_port), (b_sw, b_port) = ends
        if a_sw == b_sw:
            raise TopologyError(f"{where}: a link from {a_sw} to itself")
        add_port(PortSpec(a_sw, a_port, f"{b_sw}:{b_port}", cap, qrate, qdepth, admission), where)
        # the b end carries the answers (SYN-ACKs, acks): never gated
        add_port(
            PortSpec(b_sw, b_port, f"{a_sw}:{a_port}", cap, qrate, qdepth, False, False),
            where,
        )

    _check_reachability(topo)
    return topo


def _check_reachability(topo: Topology) -> None:
    if not topo.hosts:
        return
    start = next(iter(topo.hosts.values())).switch
    seen, todo = {start}, deque([start])
    while todo:
        for _port, nb in topo.neighbours(todo.popleft()):
            if nb not in seen:
                seen.add(nb)
                todo.append(nb)
    for host in topo.hosts.values():
        if host.switch not in seen:
            first = next(iter(topo.hosts))
            raise TopologyError(
                f"host {host.name!r} is unreachable from host {first!r} (no path of links "
                f"from {start} to {host.switch})"
            )
