/* Rate feedback on data packets leaving a port (egress):
 *
 *   rate_kbps = min(rate_kbps, fair_rate_kbps[port])
 *   flags    |= FG_FLAG_CONGESTED   when the controller marked the port
 *
 * The controller writes one port_feedback entry per port (P4Runtime MODIFY).
 * A port without an entry, or with fair rate 0, stamps nothing, so a switch
 * the controller has not configured never stalls traffic. Acks, probes and
 * resource-discovery packets are never stamped. A compare and a copy: no
 * division, no per-flow state. */
#ifndef FG_RATE_FEEDBACK_P4
#define FG_RATE_FEEDBACK_P4

#include "headers.p4"

control RateFeedback(inout headers_t hdr,
                     inout metadata_t meta,
                     in standard_metadata_t standard_metadata) {
    @name(".set_port_feedback")
    action set_port_feedback(bit<32> fair_rate_kbps, bit<1> congested) {
        meta.fair_rate_kbps = fair_rate_kbps;
        meta.port_congested = congested;
    }

    @name(".port_feedback")
    table port_feedback {
        key = {
            standard_metadata.egress_port : exact @name("egress_port");
        }
        actions = {
            set_port_feedback;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    apply {
        if (meta.fg_stampable == 1 && hdr.fg.kind == FG_KIND_DATA) {
            if (port_feedback.apply().hit) {
                if (meta.fair_rate_kbps != 0 && hdr.fg.rate_kbps > meta.fair_rate_kbps) {
                    hdr.fg.rate_kbps = meta.fair_rate_kbps;
                    meta.fg_rewritten = 1;
                }
                if (meta.port_congested == 1 && (hdr.fg.flags & FG_FLAG_CONGESTED) == 0) {
                    hdr.fg.flags = hdr.fg.flags | FG_FLAG_CONGESTED;
                    meta.fg_rewritten = 1;
                }
            }
        }
    }
}

#endif
