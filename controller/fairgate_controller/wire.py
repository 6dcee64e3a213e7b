"""The control period's two P4Runtime requests, with the P4Info lookups done once.

A period is one Read (every counter the agent uses) and at most one Write (every
rate, XCP factor and meter that changed). finsy's public API resolves names in the
P4Info and builds (or decodes) an object per entity on every call; on the hot path
that costs more than the RPCs (docs/performance.md, "Control loop"). Here:

- ``CounterReader`` builds and serializes the ReadRequest once. A counter array is read whole
  (one wildcard entity) unless the agent needs at most half of its cells (its own
  ports' cells of a per-port array or histogram): then one entity per cell, so a
  switch with 8 of 16 ports reads 592 cells instead of 1184. The reply is decoded
  straight into a ``Snapshot``.
- ``UpdateEncoder`` turns finsy entities into ``p4r.Update``s with each table's
  match and action looked up once per match key (finsy's own param encoder still
  checks and encodes every value, so the bytes are finsy's).

Both go through finsy's P4Runtime client (the same channel, election id and error
type, ``fy.P4ClientError``); ``tests/unit/controller_io/test_wire.py`` checks them
against finsy's public encode and read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import finsy as fy
import grpc
from finsy.proto import p4r

from fairgate_controller.telemetry import Snapshot

READ_METHOD = "/p4.v1.P4Runtime/Read"
RPC_TIMEOUT_S = 10.0  # finsy's own
WILDCARD_BELOW = 0.5
"""A counter is read cell by cell when the agent needs at most this share of its cells."""


class ChannelClosedError(ConnectionError):
    """The switch's P4Runtime channel closed (the switch went down) while the agent's loop
    was still running: finsy cancels the loop soon after and runs it again once the switch
    is back, so this ends the loop quietly, not a request the switch refused."""


class CounterReader:
    """One ReadRequest for `counters` of a switch; `cells` names, per counter, the
    indices the agent needs (a counter not in it is read whole)."""

    def __init__(
        self,
        schema: fy.P4Schema,
        device_id: int,
        counters: Sequence[str],
        cells: Mapping[str, Iterable[int]],
    ) -> None:
        self.names: dict[int, str] = {}
        self.indexed: dict[str, int] = {}  # counter -> cells read one by one
        entities: list[p4r.Entity] = []
        for name in counters:
            counter = schema.counters[name]
            self.names[counter.id] = name
            wanted = sorted(set(cells.get(name, ())))
            if wanted and len(wanted) <= WILDCARD_BELOW * counter.size:
                self.indexed[name] = len(wanted)
                entities += [
                    p4r.Entity(
                        counter_entry=p4r.CounterEntry(
                            counter_id=counter.id, index=p4r.Index(index=i)
                        )
                    )
                    for i in wanted
                ]
            else:
                entities.append(p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=counter.id)))
        self.request = p4r.ReadRequest(device_id=device_id, entities=entities)
        self._wire = b""
        self._call: tuple[Any, Any] | None = None  # (channel, its Read multicallable)

    def prepare(self, client: Any) -> None:
        """Let finsy's client complete the request (its role) and serialize it once."""
        complete = getattr(client, "_complete_request", None)
        if complete is not None:
            complete(self.request)
        self._wire = self.request.SerializeToString()

    def decode(self, replies: Iterable[p4r.ReadResponse]) -> Snapshot:
        """Replies to ``self.request`` -> counter name -> index -> (packets, bytes)."""
        snap: Snapshot = {name: {} for name in self.names.values()}
        names = self.names
        current_id = -1
        cells: dict[int, tuple[int, int]] = {}
        for reply in replies:
            for entity in reply.entities:
                c = entity.counter_entry
                if c.counter_id != current_id:  # replies come grouped by counter
                    current_id = c.counter_id
                    cells = snap[names[current_id]]
                d = c.data
                cells[c.index.index] = (d.packet_count, d.byte_count)
        return snap

    async def read(self, client: Any) -> Snapshot:
        """One Read RPC on finsy's client's channel (``fy.Switch._p4client``), the
        request serialized once (``prepare``); errors are finsy's ``P4ClientError``, and
        :class:`ChannelClosedError` once the switch has gone down."""
        channel = client.channel
        if channel is None:
            raise ChannelClosedError("the P4Runtime channel is closed (switch down?)")
        if not self._wire:
            self.prepare(client)
        if self._call is None or self._call[0] is not channel:
            call = channel.unary_stream(
                READ_METHOD,
                request_serializer=None,  # already bytes
                response_deserializer=p4r.ReadResponse.FromString,
            )
            self._call = (channel, call)
        try:
            replies = [reply async for reply in self._call[1](self._wire, timeout=RPC_TIMEOUT_S)]
        except grpc.RpcError as exc:
            raise fy.P4ClientError(exc, "ReadRequest") from None
        return self.decode(replies)


class UpdateEncoder:
    """finsy entities -> MODIFY ``p4r.Update``s, caching each table entry's encoded
    match (per table, match and priority) and each action's P4Info lookups."""

    def __init__(self, schema: fy.P4Schema) -> None:
        self.schema = schema
        self._match: dict[tuple[Any, ...], tuple[int, list[p4r.FieldMatch]]] = {}
        self._action: dict[tuple[str, str], tuple[int, Any]] = {}

    def entity(self, e: Any) -> p4r.Entity:
        if type(e) is fy.P4TableEntry and _plain(e):
            return p4r.Entity(table_entry=self._table_entry(e))
        return e.encode(self.schema)  # anything else: finsy's own path

    def modify(self, entities: Iterable[Any]) -> list[p4r.Update]:
        return [p4r.Update(type=p4r.Update.MODIFY, entity=self.entity(e)) for e in entities]

    def _table_entry(self, e: fy.P4TableEntry) -> p4r.TableEntry:
        key = (e.table_id, tuple(e.match.items()) if e.match else (), e.priority)
        try:
            cached = self._match.get(key)
        except TypeError:  # a match value that cannot be a key: finsy's own path
            return e.encode_entry(self.schema)
        if cached is None:
            msg = fy.P4TableEntry(e.table_id, match=e.match, priority=e.priority).encode_entry(
                self.schema
            )
            cached = self._match[key] = (msg.table_id, list(msg.match))
        table_id, match = cached
        action = e.action
        assert isinstance(action, fy.P4TableAction)
        akey = (e.table_id, action.name)
        ref = self._action.get(akey)
        if ref is None:
            table = self.schema.tables[e.table_id]
            if table.action_profile is not None:
                raise ValueError(f"{table.name}: indirect tables are not on the fast path")
            try:
                aref = table.actions[action.name]
            except Exception as exc:
                raise ValueError(f"{table.name!r}: {exc}") from exc
            ref = self._action[akey] = (aref.id, aref.params)
        action_id, params = ref
        if len(action.args) != len(params):
            # finsy names the missing parameters
            return fy.P4TableEntry(
                e.table_id, match=e.match, action=action, priority=e.priority
            ).encode_entry(self.schema)
        try:
            encoded = [params[name].encode_param(value) for name, value in action.args.items()]
        except ValueError as exc:
            raise ValueError(f"{action.name!r}: {exc}") from exc
        return p4r.TableEntry(
            table_id=table_id,
            match=match,
            action=p4r.TableAction(action=p4r.Action(action_id=action_id, params=encoded)),
            priority=e.priority,
        )


def _plain(e: fy.P4TableEntry) -> bool:
    """A table entry with a match and a direct action and nothing else (what the loop writes)."""
    return (
        bool(e.table_id)
        and isinstance(e.action, fy.P4TableAction)
        and not e.is_default_action
        and e.meter_config is None
        and e.counter_data is None
        and e.meter_counter_data is None
        and e.time_since_last_hit is None
        and not e.idle_timeout_ns
        and not e.metadata
        and not e.controller_metadata
    )
