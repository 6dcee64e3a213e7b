/* Session admission: TCP SYNs (SYN set; ACK, RST, FIN clear) leaving a port
 * that has an admission_ports entry pass a packets-per-second meter whose
 * rate the controller writes as a P4Runtime MeterEntry (the admit rate is its
 * PIR). Red SYNs are dropped. Per port the session_events counter records
 * SYNs admitted, dropped and ungated, SYN-ACKs, FINs and RSTs (index = port << 3 | event;
 * SYNs seen = admitted + dropped + ungated). SYN-ACKs are never gated. */
#ifndef FG_ADMISSION_P4
#define FG_ADMISSION_P4

#include "headers.p4"

control SynAdmission(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    @name(".syn_meter")
    meter(FG_MAX_PORTS, MeterType.packets) syn_meter;

    @name(".session_events")
    counter(FG_SESSION_ENTRIES, CounterType.packets) session_events;

    /* meta.index: the session_events index of this packet (first the
     * egress port alone, which indexes the meter), FG_SESSION_ENTRIES when
     * nothing is counted. Set outside the actions that pass it: on BMv2 each
     * local and each computed extern argument is a field reset per packet
     * (docs/performance.md "Pipeline"). */

    @name(".gate_syns")
    action gate_syns() {
        syn_meter.execute_meter(meta.index, meta.syn_color);
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
            meta.index = (meta.index << FG_SESSION_EVENT_BITS) | FG_EVENT_FIN;
        } else {
            meta.index = FG_SESSION_ENTRIES;
        }
        if (meta.index != FG_SESSION_ENTRIES) {
            session_events.count(meta.index);
        }
    }
}

#endif
