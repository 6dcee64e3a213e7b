"""Topology file: the format round-trips, and bad files get precise errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fairgate_controller.routes import compute_routes
from fairgate_controller.topology import TopologyError, load, parse


def dumbbell() -> dict[str, Any]:
    return {
        "switches": [
            {
                "name": "s1",
                "grpc_addr": "127.0.0.1:50001",
                "device_id": 0,
                "thrift_port": 9090,
                "mac": "02:fa:00:00:00:01",
            },
            {
                "name": "s2",
                "grpc_addr": "127.0.0.1:50002",
                "device_id": 0,
                "thrift_port": 9091,
                "mac": "02:fa:00:00:00:02",
            },
        ],
        "hosts": [
            {
                "name": "h1",
                "ip": "10.0.1.1",
                "mac": "00:00:00:00:01:01",
                "switch": "s1",
                "port": 1,
                "capacity_kbps": 100000,
            },
            {
                "name": "h2",
                "ip": "10.0.1.2",
                "mac": "00:00:00:00:01:02",
                "switch": "s1",
                "port": 2,
                "capacity_kbps": 100000,
            },
            {
                "name": "h3",
                "ip": "10.0.2.3",
                "mac": "00:00:00:00:02:03",
                "switch": "s2",
                "port": 1,
                "capacity_kbps": 100000,
            },
        ],
        "links": [
            {
                "a": "s1:3",
                "b": "s2:2",
                "capacity_kbps": 10000,
                "queue_rate_pps": 833,
                "queue_depth": 64,
                "admission": True,
            }
        ],
    }


def test_parse_dumbbell() -> None:
    topo = parse(dumbbell())
    assert sorted(topo.switches) == ["s1", "s2"]
    port = topo.ports[("s1", 3)]
    assert port.peer == "s2:2" and port.capacity_Bps == 10000 * 1000 / 8
    assert port.queue_rate_pps == 833 and port.admission
    assert topo.ports[("s2", 2)].peer == "s1:3"
    assert topo.ports[("s1", 1)].peer == "h1"
    assert topo.neighbours("s1") == [(3, "s2")]


def test_a_links_admission_gates_its_a_end_only() -> None:
    """A link's admission is the data direction's, as its queue settings: the b end
    carries the servers' SYN-ACKs and acks and is never gated."""
    topo = parse(dumbbell())
    assert topo.ports[("s1", 3)].admission
    assert not topo.ports[("s2", 2)].admission
    assert [p.port for p in topo.switch_ports("s2") if p.admission] == []


def test_round_trip_through_json(tmp_path: Path) -> None:
    topo = parse(dumbbell())
    path = tmp_path / "t.json"
    path.write_text(json.dumps(topo.to_json()))
    again = load(path)
    assert again.ports == topo.ports and again.hosts == topo.hosts
    assert again.switches == topo.switches


def test_routes_follow_shortest_paths() -> None:
    routes = compute_routes(parse(dumbbell()))
    s1 = {r.prefix: r for r in routes["s1"]}
    assert s1["10.0.1.1/32"].port == 1 and s1["10.0.1.1/32"].dst_mac == "00:00:00:00:01:01"
    assert s1["10.0.2.3/32"].port == 3 and s1["10.0.2.3/32"].dst_mac == "02:fa:00:00:00:02"
    assert all(r.src_mac == "02:fa:00:00:00:01" for r in routes["s1"])
    s2 = {r.prefix: r.port for r in routes["s2"]}
    assert s2 == {"10.0.1.1/32": 2, "10.0.1.2/32": 2, "10.0.2.3/32": 1}


def test_routes_in_a_ring_take_the_short_way() -> None:
    doc = dumbbell()
    doc["switches"].append(
        {"name": "s3", "grpc_addr": "127.0.0.1:50003", "device_id": 0, "mac": "02:fa:00:00:00:03"}
    )
    doc["links"] += [
        {"a": "s2:3", "b": "s3:1", "capacity_kbps": 1000},
        {"a": "s3:2", "b": "s1:4", "capacity_kbps": 1000},
    ]
    doc["hosts"].append(
        {
            "name": "h4",
            "ip": "10.0.3.4",
            "mac": "00:00:00:00:03:04",
            "switch": "s3",
            "port": 3,
            "capacity_kbps": 1000,
        }
    )
    routes = {r.prefix: r.port for r in compute_routes(parse(doc))["s1"]}
    assert routes["10.0.3.4/32"] == 4  # one hop via s3, not two via s2


def broken(edit: Any) -> dict[str, Any]:
    doc = copy.deepcopy(dumbbell())
    edit(doc)
    return doc


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d["hosts"][0].update(switch="s9"), "host 'h1': unknown switch 's9'"),
        (lambda d: d["links"][0].update(b="s7:1"), "links[0]: unknown switch 's7'"),
        (lambda d: d["hosts"][1].update(port=1), "host 'h2': duplicate port s1:1 (already to h1)"),
        (lambda d: d["links"][0].update(a="s1:1"), "links[0]: duplicate port s1:1"),
        (lambda d: d["links"][0].pop("capacity_kbps"), "links[0]: missing capacity"),
        (lambda d: d["hosts"][2].update(capacity_kbps=0), "capacity_kbps must be a positive"),
        (lambda d: d["links"].clear(), "host 'h3' is unreachable from host 'h1'"),
        (lambda d: d["hosts"][0].update(ip="10.0.1.300"), "bad IPv4 address"),
        (lambda d: d["hosts"][1].update(ip="10.0.1.1"), "IP 10.0.1.1 is also 'h1'"),
        (lambda d: d["hosts"][0].update(mac="zz"), "bad MAC address"),
        (lambda d: d["hosts"][0].update(port=16), "port must be an integer 1..15"),
        (lambda d: d["links"][0].update(a="s1-3"), "'a' must be 'switch:port'"),
        (lambda d: d["switches"].append(dict(d["switches"][0])), "switch 's1': defined twice"),
        (lambda d: d["switches"][1].update(grpc_addr="127.0.0.1:50001"), "grpc_addr"),
        (lambda d: d.update(hostz=[]), "unknown top-level keys: hostz"),
        (lambda d: d["switches"][0].pop("device_id"), "switch 's1': missing 'device_id'"),
        (lambda d: d["switches"][0].update(device_id="0"), "'device_id' has the wrong type"),
    ],
)
def test_precise_errors(edit: Any, message: str) -> None:
    with pytest.raises(TopologyError) as err:
        parse(broken(edit))
    assert message in str(err.value)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="no such topology file"):
        load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TopologyError, match=r"bad\.json: not JSON"):
        load(bad)


# Issue #16: every malformed file gets one line naming the field, never a traceback.
@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d.update(switches=3), "'switches' must be a list, got int 3"),
        (lambda d: d.update(hosts={"h1": {}}), "'hosts' must be a list, got dict"),
        (lambda d: d.update(links="s1:3-s2:2"), "'links' must be a list, got str"),
        (lambda d: d["switches"].__setitem__(0, 7), "switches[0]: must be an object"),
        (lambda d: d["hosts"].__setitem__(0, None), "hosts[0]: must be an object"),
        (
            lambda d: d["switches"][0].update(grcp_addr="x"),
            "switches[0]: unknown key(s) 'grcp_addr'",
        ),
        (lambda d: d["hosts"][0].update(capacity=5), "hosts[0]: unknown key(s) 'capacity'"),
        (lambda d: d["links"][0].update(rate_pps=5), "links[0]: unknown key(s) 'rate_pps'"),
        (lambda d: d["switches"][0].update(grpc_addr="127.0.0.1"), "grpc_addr must be 'host:port'"),
        (lambda d: d["switches"][0].update(grpc_addr="127.0.0.1:0"), "port must be 1..65535"),
        (lambda d: d["switches"][0].update(grpc_addr="127.0.0.1:70000"), "port must be 1..65535"),
        (lambda d: d["switches"][0].update(grpc_addr="127.0.0.256:5"), "bad IPv4 address"),
        (lambda d: d["switches"][0].update(grpc_addr="[::g]:5"), "bad IPv6 address"),
        (lambda d: d["switches"][0].update(grpc_addr="a b:5"), "bad host name"),
        (lambda d: d["switches"][0].update(thrift_port=-1), "'thrift_port' must be an integer"),
        (lambda d: d["switches"][0].update(thrift_port=65536), "'thrift_port' must be an integer"),
        (lambda d: d["switches"][0].update(device_id=-1), "'device_id' must be 0..2^64-1"),
        (lambda d: d["switches"][0].update(name=""), "switches[0]: 'name' must be non-empty"),
        (lambda d: d["switches"][0].update(name=5), "switches[0]: 'name' has the wrong type"),
        (lambda d: d["links"][0].update(capacity_kbps=-10), "capacity_kbps must be a positive"),
        (lambda d: d["links"][0].update(capacity_kbps=True), "capacity_kbps must be a positive"),
        (lambda d: d["links"][0].update(capacity_kbps="10"), "capacity_kbps must be a positive"),
        (lambda d: d["links"][0].update(queue_rate_pps=-5), "'queue_rate_pps' must be an integer"),
        (lambda d: d["links"][0].update(queue_depth=0), "'queue_depth' must be an integer >= 1"),
        (lambda d: d["links"][0].update(queue_depth=1.5), "'queue_depth' must be an integer"),
        (lambda d: d["hosts"][0].update(admission="yes"), "'admission' must be true or false"),
        (lambda d: d["links"][0].update(b="s1:4"), "links[0]: a link from s1 to itself"),
        (lambda d: d["hosts"][0].update(port=0), "port must be an integer 1..15"),
        (lambda d: d["hosts"][0].update(ip=10), "'ip' has the wrong type"),
        (lambda d: d["switches"][0].update(mac="02:fa:00:00:00"), "bad MAC address"),
    ],
)
def test_malformed_fields_name_the_field(edit: Any, message: str) -> None:
    with pytest.raises(TopologyError) as err:
        parse(broken(edit))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "content,message",
    [
        (b"\xff\xfe{}", "not UTF-8 text (byte 0xff at offset 0)"),
        (b'{"switches": [{"name": "s\xe9"}]}', "not UTF-8 text (byte 0xe9 at offset 25)"),
        (b"", "not JSON"),
        (b"[1, 2]", "the top level must be an object"),
        (b'{"switches": [], "links": [{"a": "s1:1", "b": "s2:1", "capacity_kbps": NaN}]}', "NaN"),
        (b'{"links": [{"capacity_kbps": 1e999}]}', "no switches"),
        (b"[" * 100000 + b"]" * 100000, "not JSON"),
    ],
)
def test_bad_files_name_the_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(content)
    with pytest.raises(TopologyError) as err:
        load(path)
    text = str(err.value)
    assert text.startswith(f"{path}: ") and message in text, text
    assert "\n" not in text


def test_a_directory_or_unreadable_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="is a directory, not a topology file"):
        load(tmp_path)
    inf = copy.deepcopy(dumbbell())
    inf["links"][0]["capacity_kbps"] = 1e999  # JSON's 1e999 parses as infinity
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(inf).replace("Infinity", "1e999"))
    with pytest.raises(TopologyError, match="capacity_kbps must be a positive number"):
        load(path)


def test_link_queue_is_set_on_its_a_end_only_and_round_trips(tmp_path: Path) -> None:
    doc = dumbbell()
    link = doc["links"][0]
    link["a"], link["b"] = link["b"], link["a"]  # data direction s2 -> s1
    link.update(queue_rate_pps=500, queue_depth=32)
    topo = parse(doc)
    a_sw, a_port = link["a"].split(":")
    b_sw, b_port = link["b"].split(":")
    assert topo.ports[(a_sw, int(a_port))].queue_end
    assert not topo.ports[(b_sw, int(b_port))].queue_end
    path = tmp_path / "t.json"
    path.write_text(json.dumps(topo.to_json()))
    assert load(path).ports == topo.ports
