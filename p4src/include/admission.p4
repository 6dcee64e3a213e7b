/* Session admission: TCP SYNs (SYN set; ACK, RST, FIN clear) leaving a port
 * that has an admission_ports entry pass a packets-per-second meter whose
 * rate the controller writes as a P4Runtime MeterEntry (the admit rate is its
 * PIR). Red SYNs are dropped. Per port the session_events counter records
 * SYNs admitted, dropped and ungated, SYN-ACKs, FINs and RSTs (index = port << 3 | event;
 * SYNs seen = admitted + dropped + ungated). SYN-ACKs are never gated.
 *
 * FINs are counted once per copy, as first copies (FG_EVENT_FIN) or repeats
 * (FG_EVENT_FIN_REPEAT): the FIN filter, a register of FG_FIN_FILTER_SLOTS
 * sequence numbers indexed by a CRC-32 of the flow's addresses and ports, holds
 * the last FIN seen per slot, and a FIN whose slot holds its own sequence number
 * is a retransmission. A server sends its FIN once all of a flow's data arrived,
 * and again whenever the client's ACK of it is lost, so its first copies count
 * completed flows where all copies do not (docs/session-control.md, "What counts
 * as a completion"). Bounded state, no control-plane entries: another flow's FIN
 * overwriting a slot between two copies makes the second count as first (rare:
 * the slots outnumber the FINs of several seconds), and a FIN whose sequence
 * number is 0 in a slot never written counts as a repeat (odds 2^-32). */
#ifndef FG_ADMISSION_P4
#define FG_ADMISSION_P4

#include "headers.p4"
#include "flow_tuple.p4"

/* The FIN filter's scratch: header fields are not reset per packet on BMv2
 * (only a header's validity bit is; docs/performance.md "Pipeline"). */
header fin_scratch_t {
    bit<32> slot;
    bit<32> seen;
}

control SynAdmission(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    flow_tuple_t k;
    fin_scratch_t f;

    @name(".syn_meter")
    meter(FG_MAX_PORTS, MeterType.packets) syn_meter;

    @name(".session_events")
    counter(FG_SESSION_ENTRIES, CounterType.packets) session_events;

    @name(".fin_filter")
    register<bit<32>>(FG_FIN_FILTER_SLOTS) fin_filter;

    /* meta.index: the session_events index of this packet (first the
     * egress port alone, which indexes the meter), FG_SESSION_ENTRIES when
     * nothing is counted. Set outside the actions that pass it: on BMv2 each
     * local and each computed extern argument is a field reset per packet
     * (docs/performance.md "Pipeline"). */

    @name(".gate_syns")
    action gate_syns() {
        syn_meter.execute_meter(meta.index, meta.syn_color);
    }

    /* A FIN: first copy or repeat (the file's header comment). */
    @hidden
    action filter_fin() {
        k.setValid();
        f.setValid();
        k.src_addr = hdr.ipv4.src_addr;
        k.dst_addr = hdr.ipv4.dst_addr;
        k.protocol = hdr.ipv4.protocol;
        k.src_port = hdr.tcp.src_port;
        k.dst_port = hdr.tcp.dst_port;
        hash(f.slot, HashAlgorithm.crc32, 32w0, k, (bit<32>)FG_FIN_FILTER_SLOTS);
        fin_filter.read(f.seen, f.slot);
        fin_filter.write(f.slot, hdr.tcp.seq_no);
    }

    @name(".admission_ports")
    table admission_ports {
        key = {
            standard_metadata.egress_spec : exact @name("egress_port");
        }
        actions = {
            gate_syns;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    apply {
        /* The event index is taken before a drop: mark_to_drop rewrites egress_spec. */
        meta.index = (bit<32>)standard_metadata.egress_spec;
        meta.syn_color = FG_METER_GREEN;
        if ((hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK | TCP_FLAG_RST | TCP_FLAG_FIN))
            == TCP_FLAG_SYN) {
            if (admission_ports.apply().hit) {
                if (meta.syn_color == FG_METER_RED) {
                    mark_to_drop(standard_metadata);
                    meta.dropped = 1;
                    meta.index = (meta.index << FG_SESSION_EVENT_BITS) | FG_EVENT_SYN_DROPPED;
                } else {
                    meta.index = (meta.index << FG_SESSION_EVENT_BITS) | FG_EVENT_SYN_ADMITTED;
                }
            } else {
                meta.index = (meta.index << FG_SESSION_EVENT_BITS) | FG_EVENT_SYN_UNGATED;
            }
        } else if ((hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK | TCP_FLAG_RST | TCP_FLAG_FIN))
                   == (TCP_FLAG_SYN | TCP_FLAG_ACK)) {
            meta.index = (meta.index << FG_SESSION_EVENT_BITS) | FG_EVENT_SYNACK;
        } else if ((hdr.tcp.flags & TCP_FLAG_RST) != 0) {
            meta.index = (meta.index << FG_SESSION_EVENT_BITS) | FG_EVENT_RST;
        } else if ((hdr.tcp.flags & TCP_FLAG_FIN) != 0) {
            filter_fin();
            if (f.seen == hdr.tcp.seq_no) {
                meta.index = (meta.index << FG_SESSION_EVENT_BITS) | FG_EVENT_FIN_REPEAT;
            } else {
                meta.index = (meta.index << FG_SESSION_EVENT_BITS) | FG_EVENT_FIN;
            }
        } else {
            meta.index = FG_SESSION_ENTRIES;
        }
        if (meta.index != FG_SESSION_ENTRIES) {
            session_events.count(meta.index);
        }
    }
}

#endif
