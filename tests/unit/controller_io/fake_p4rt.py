"""An in-process fake P4Runtime server for controller unit tests.

It does what the controller relies on, the way BMv2's server does it:
arbitration by election id (highest is primary, backups get ALREADY_EXISTS),
pipeline set/get by cookie ("no forwarding pipeline config" when none),
table entries with INSERT/MODIFY/DELETE semantics (ALREADY_EXISTS, NOT_FOUND),
wildcard reads of tables and counters (every index, zeros included), reads of
one counter cell (an entity with an index), counter and meter MODIFY, and
PERMISSION_DENIED for writes from a non-primary. Tests set counter values
directly (`set_counter`) and inspect `entries`, `meters`, `writes` and `reads`
(every Read and Write request, in order). `restart()` forgets everything, like a switch restart.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
from finsy import P4Schema
from finsy.proto import p4r, p4r_grpc
from finsy.proto import rpc_code as code_pb2
from finsy.proto import rpc_status as status_pb2


def _u128(value: Any) -> int:
    return (value.high << 64) | value.low


@dataclass
class _Client:
    election_id: int
    queue: asyncio.Queue[p4r.StreamMessageResponse] = field(default_factory=asyncio.Queue)


class FakeP4Runtime(p4r_grpc.P4RuntimeServicer):
    def __init__(self) -> None:
        self.server: grpc.aio.Server | None = None
        self.port = 0
        self.clients: dict[int, _Client] = {}
        self.restart()

    # ---- test API ------------------------------------------------------------
    def restart(self) -> None:
        self.config: p4r.ForwardingPipelineConfig | None = None
        self.schema: P4Schema | None = None
        self.entries: dict[bytes, p4r.TableEntry] = {}
        self.counters: dict[tuple[int, int], tuple[int, int]] = {}
        self.meters: dict[tuple[int, int], p4r.MeterConfig | None] = {}
        self.writes: list[tuple[int, p4r.WriteRequest]] = []
        self.reads: list[p4r.ReadRequest] = []
        self.pipeline_pushes = 0

    def set_counter(self, name: str, index: int, packets: int, nbytes: int) -> None:
        assert self.schema is not None, "no pipeline yet"
        self.counters[(self.schema.counters[name].id, index)] = (packets, nbytes)

    def table(self, name: str) -> list[p4r.TableEntry]:
        assert self.schema is not None
        tid = self.schema.tables[name].id
        return [e for e in self.entries.values() if e.table_id == tid]

    @property
    def primary_id(self) -> int:
        return max((c.election_id for c in self.clients.values()), default=0)

    # ---- server --------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def serve(self, port: int = 0) -> AsyncIterator[FakeP4Runtime]:
        """Listen on 127.0.0.1:`port` (0: any free port)."""
        self.server = grpc.aio.server()
        p4r_grpc.add_P4RuntimeServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port(f"127.0.0.1:{port}")
        await self.server.start()
        try:
            yield self
        finally:
            await self.server.stop(None)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _arbitration(self, client: _Client) -> p4r.StreamMessageResponse:
        primary = self.primary_id
        code = code_pb2.OK if client.election_id == primary else code_pb2.ALREADY_EXISTS
        return p4r.StreamMessageResponse(
            arbitration=p4r.MasterArbitrationUpdate(
                device_id=0,
                election_id=p4r.Uint128(high=primary >> 64, low=primary & (2**64 - 1)),
                status=status_pb2.Status(code=code),
            )
        )

    def _notify_all(self) -> None:
        for client in self.clients.values():
            client.queue.put_nowait(self._arbitration(client))

    async def StreamChannel(self, request_iter: Any, context: Any) -> AsyncIterator[Any]:
        key = id(context)
        client: _Client | None = None

        async def reader() -> None:
            nonlocal client
            async for request in request_iter:
                if request.WhichOneof("update") == "arbitration":
                    eid = _u128(request.arbitration.election_id)
                    if any(c.election_id == eid for k, c in self.clients.items() if k != key):
                        await context.abort(
                            grpc.StatusCode.INVALID_ARGUMENT, "Election id already exists"
                        )
                    if client is None:
                        client = _Client(eid)
                        self.clients[key] = client
                    client.election_id = eid
                    self._notify_all()

        task = asyncio.create_task(reader())
        try:
            while not task.done() or (client is not None and not client.queue.empty()):
                if client is None:
                    await asyncio.sleep(0.01)
                    continue
                get = asyncio.create_task(client.queue.get())
                done, _ = await asyncio.wait({get, task}, return_when=asyncio.FIRST_COMPLETED)
                if get in done:
                    yield get.result()
                else:
                    get.cancel()
        finally:
            task.cancel()
            self.clients.pop(key, None)
            self._notify_all()

    async def Capabilities(self, request: Any, context: Any) -> Any:
        return p4r.CapabilitiesResponse(p4runtime_api_version="1.3.0")

    async def GetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:
        if self.config is None:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "No forwarding pipeline config set for this device",
            )
        return p4r.GetForwardingPipelineConfigResponse(config=self.config)

    async def SetForwardingPipelineConfig(self, request: Any, context: Any) -> Any:
        if _u128(request.election_id) != self.primary_id:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "Not primary")
        self.restart_state_for(request.config)
        return p4r.SetForwardingPipelineConfigResponse()

    def restart_state_for(self, config: p4r.ForwardingPipelineConfig) -> None:
        pushes = self.pipeline_pushes + 1
        self.restart()
        self.pipeline_pushes = pushes
        self.config = config
        self.schema = P4Schema(config.p4info)

    @staticmethod
    def _key(entry: p4r.TableEntry) -> bytes:
        k = p4r.TableEntry(table_id=entry.table_id, priority=entry.priority)
        k.match.extend(sorted(entry.match, key=lambda m: m.field_id))
        return k.SerializeToString(deterministic=True)

    async def Write(self, request: Any, context: Any) -> Any:
        if _u128(request.election_id) != self.primary_id:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "Not primary")
        self.writes.append((_u128(request.election_id), request))
        for update in request.updates:
            which = update.entity.WhichOneof("entity")
            if which == "table_entry":
                entry = update.entity.table_entry
                key = self._key(entry)
                if update.type == p4r.Update.INSERT:
                    if key in self.entries:
                        await context.abort(grpc.StatusCode.ALREADY_EXISTS, "entry exists")
                    self.entries[key] = entry
                elif update.type == p4r.Update.MODIFY:
                    if key not in self.entries:
                        await context.abort(grpc.StatusCode.NOT_FOUND, "no such entry")
                    self.entries[key] = entry
                else:
                    if self.entries.pop(key, None) is None:
                        await context.abort(grpc.StatusCode.NOT_FOUND, "no such entry")
            elif which == "meter_entry":
                m = update.entity.meter_entry
                cfg = m.config if m.HasField("config") else None
                self.meters[(m.meter_id, m.index.index)] = cfg
            elif which == "counter_entry":
                c = update.entity.counter_entry
                self.counters[(c.counter_id, c.index.index)] = (
                    c.data.packet_count,
                    c.data.byte_count,
                )
        return p4r.WriteResponse()

    async def Read(self, request: Any, context: Any) -> AsyncIterator[Any]:
        assert self.schema is not None
        self.reads.append(request)
        out = p4r.ReadResponse()
        for entity in request.entities:
            which = entity.WhichOneof("entity")
            if which == "table_entry":
                tid = entity.table_entry.table_id
                for e in self.entries.values():
                    if tid in (0, e.table_id):
                        out.entities.add(table_entry=e)
            elif which == "counter_entry":
                cid = entity.counter_entry.counter_id
                size = self.schema.counters[cid].size
                if entity.counter_entry.HasField("index"):
                    cells = [entity.counter_entry.index.index]
                    if not 0 <= cells[0] < size:
                        await context.abort(grpc.StatusCode.OUT_OF_RANGE, "index out of range")
                else:
                    cells = list(range(size))
                for i in cells:
                    pkts, nbytes = self.counters.get((cid, i), (0, 0))
                    out.entities.add(
                        counter_entry=p4r.CounterEntry(
                            counter_id=cid,
                            index=p4r.Index(index=i),
                            data=p4r.CounterData(packet_count=pkts, byte_count=nbytes),
                        )
                    )
        yield out
