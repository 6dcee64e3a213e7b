"""Base class for FairGate's PTF tests.

Each test connects to simple_switch_grpc over P4Runtime (finsy, run on a
private event loop in a background thread so PTF's synchronous tests can call
it), arbitrates, pushes its program's pipeline when the switch holds another,
and removes every entry and meter config it wrote when it ends, so tests do
not leak state into each other. P4Runtime errors become assertion failures
that say what was written and why the switch refused it.

The P4Runtime connection is fairgate_controller.sync_client.SyncSwitch.
Test parameters (set by run-ptf): grpc_addr, device_id, thrift_port,
compiled_dir.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import finsy as fy
import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest

from fairgate_controller.sync_client import P4RuntimeError, SyncSwitch
from fairgate_topo.switch_cli import SwitchCliError, run_switch_cli

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)  # route warnings in the namespace


class FgTestBase(BaseTest):
    """One PTF test against one FairGate program ("fairgate" or "forward")."""

    program = "fairgate"

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        params = tu.test_params_get()
        compiled = Path(params["compiled_dir"])
        self.thrift_port = int(params["thrift_port"])
        self._written: list[Any] = []
        self._meters: set[tuple[str, int]] = set()
        self.p4rt = SyncSwitch(
            params["grpc_addr"],
            compiled / f"{self.program}.p4info.txtpb",
            compiled / f"{self.program}.json",
            device_id=int(params["device_id"]),
            name="ptf",
        )

    def tearDown(self) -> None:
        try:
            for entity in reversed(self._written):
                self._write("delete", [entity], track=False)
            for meter, index in self._meters:
                self._write("modify", [fy.P4MeterEntry(meter, index=index)], track=False)
            self.reset_queue_rates()
        finally:
            self.p4rt.close()
            BaseTest.tearDown(self)

    # ---- P4Runtime ---------------------------------------------------------
    def _write(self, op: str, entities: list[Any], track: bool = True) -> None:
        try:
            self.p4rt.write(op, entities)
        except P4RuntimeError as exc:
            raise AssertionError(str(exc)) from None
        if track and op == "insert":
            self._written.extend(entities)

    def insert(self, *entities: Any) -> None:
        """Insert entries; they are deleted again when the test ends."""
        self._write("insert", list(entities))

    def modify(self, *entities: Any) -> None:
        self._write("modify", list(entities))

    def read(self, entity: Any) -> list[Any]:
        try:
            return self.p4rt.read(entity)
        except P4RuntimeError as exc:
            raise AssertionError(str(exc)) from None

    def read_counters(self, counter: str) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) for every index of an indirect counter."""
        try:
            return self.p4rt.read_counters(counter)
        except P4RuntimeError as exc:
            raise AssertionError(str(exc)) from None

    def set_meter(self, meter: str, index: int, rate: int, burst: int) -> None:
        """Packets-mode meter: admit `rate` per second with `burst` (cir = pir)."""
        config = fy.P4MeterConfig(cir=rate, cburst=burst, pir=rate, pburst=burst)
        self._write("modify", [fy.P4MeterEntry(meter, index=index, config=config)])
        self._meters.add((meter, index))

    def add_route(self, prefix: str, port: int, src_mac: str, dst_mac: str) -> None:
        self.insert(
            fy.P4TableEntry(
                "ipv4_routes",
                match=fy.Match(dst_addr=prefix),
                action=fy.Action("forward", port=port, src_mac=src_mac, dst_mac=dst_mac),
            )
        )

    def set_feedback(self, port: int, rate_kbps: int, congested: bool = False) -> None:
        self.insert(
            fy.P4TableEntry(
                "port_feedback",
                match=fy.Match(egress_port=port),
                action=fy.Action(
                    "set_port_feedback", fair_rate_kbps=rate_kbps, congested=int(congested)
                ),
            )
        )

    def set_buckets(self, table: str, action: str, bounds: list[int]) -> None:
        """Bucket b holds values in [bounds[b], bounds[b+1] - 1]; values past the
        last bound fall to the table's default, the overflow bucket."""
        for b, (lo, hi) in enumerate(itertools.pairwise(bounds)):
            self.insert(
                fy.P4TableEntry(
                    table,
                    match=fy.Match({self._range_key(table): f"{lo}...{hi - 1}"}),
                    action=fy.Action(action, bucket=b),
                    priority=1,
                )
            )

    @staticmethod
    def _range_key(table: str) -> str:
        return {"queue_buckets": "enq_qdepth", "rtt_buckets": "rtt_us"}[table]

    def anomaly_count(self, reason: int) -> int:
        return self.read_counters("input_anomalies").get(reason, (0, 0))[0]

    # ---- BMv2 Thrift (what P4Runtime does not cover) -----------------------
    def switch_cli(self, commands: Iterable[str]) -> str:
        try:
            return run_switch_cli(self.thrift_port, list(commands))
        except SwitchCliError as exc:
            raise AssertionError(str(exc)) from None

    def set_queue_rate(self, port: int, pps: int, depth: int | None = None) -> None:
        cmds = [f"set_queue_rate {pps} {port}"]
        if depth is not None:
            cmds.append(f"set_queue_depth {depth} {port}")
        self.switch_cli(cmds)
        self._queue_ports = getattr(self, "_queue_ports", set()) | {port}

    def reset_queue_rates(self) -> None:
        ports = getattr(self, "_queue_ports", set())
        if ports:
            # 0 pps means "no rate limit" in BMv2; 64 packets is its default depth.
            self.switch_cli(
                [c for p in ports for c in (f"set_queue_rate 0 {p}", f"set_queue_depth 64 {p}")]
            )

    # ---- dataplane ---------------------------------------------------------
    def send(self, port: int, pkt: Any) -> None:
        tu.send_packet(self, port, pkt)

    def expect(self, pkt: Any, port: int) -> None:
        tu.verify_packet(self, pkt, port)

    def expect_nothing(self) -> None:
        tu.verify_no_other_packets(self)

    def collect(self, port: int, quiet_s: float = 0.5, max_s: float = 15.0) -> list[bytes]:
        """Every packet out of `port` until none came for `quiet_s` seconds."""
        packets: list[bytes] = []
        deadline = time.monotonic() + max_s
        while time.monotonic() < deadline:
            result = self.dataplane.poll(port_number=port, timeout=quiet_s)
            if not isinstance(result, self.dataplane.PollSuccess):
                break
            packets.append(bytes(result.packet))
        return packets

    def settle(self, seconds: float = 0.2) -> None:
        """Let BMv2 finish counting before a counter read."""
        time.sleep(seconds)
