/* TNA egress features: DepartureTelemetry (../include/telemetry.p4) and
 * RateFeedback (../include/rate_feedback.p4), same control-plane names. */
#ifndef FG_TNA_EGRESS_P4
#define FG_TNA_EGRESS_P4

#include "tna/types.p4"

#ifndef FG_TNA_NO_TELEMETRY
control DepartureTelemetry(in tna_headers_t hdr,
                           inout tna_egress_meta_t meta,
                           in egress_intrinsic_metadata_t eg_intr_md) {
    @name(".port_departures")
    Counter<bit<64>, bit<4>>(FG_MAX_PORTS, CounterType_t.PACKETS_AND_BYTES) port_departures;

    @name(".queue_depth_hist")
    Counter<bit<32>, bit<9>>(FG_HIST_ENTRIES, CounterType_t.PACKETS) queue_depth_hist;

    @name(".rtt_hist")
    Counter<bit<32>, bit<9>>(FG_HIST_ENTRIES, CounterType_t.PACKETS) rtt_hist;

    @name(".set_queue_bucket")
    action set_queue_bucket(bit<8> bucket) {
        meta.queue_bucket = bucket;
    }

    @name(".set_rtt_bucket")
    action set_rtt_bucket(bit<8> bucket) {
        meta.rtt_bucket = bucket;
    }

    /* enq_qdepth counts 80-byte cells on Tofino, packets on BMv2. */
    @name(".queue_buckets")
    table queue_buckets {
        key = {
            eg_intr_md.enq_qdepth : range @name("enq_qdepth");
        }
        actions = {
            set_queue_bucket;
        }
        const default_action = set_queue_bucket(FG_HIST_BUCKETS - 1);
        size = FG_HIST_BUCKETS;
    }

    /* Tofino range matches take at most 5 nibbles (20 bits): the 32-bit
     * rtt_us is ternary here, the controller installs each bucket's range
     * as prefixes (at most 62 per range; 16 on average for 32 buckets). */
    @name(".rtt_buckets")
    table rtt_buckets {
        key = {
            hdr.fg.rtt_us : ternary @name("rtt_us");
        }
        actions = {
            set_rtt_bucket;
        }
        const default_action = set_rtt_bucket(FG_HIST_BUCKETS - 1);
        size = FG_HIST_BUCKETS * 16;
    }

    apply {
        port_departures.count(eg_intr_md.egress_port[3:0]);
        queue_buckets.apply();
        queue_depth_hist.count(eg_intr_md.egress_port[3:0] ++ meta.queue_bucket[4:0]);
        if (meta.bridge.fg_stampable == 1 && hdr.fg.kind == FG_KIND_DATA && hdr.fg.rtt_us != 0) {
            rtt_buckets.apply();
            rtt_hist.count(eg_intr_md.egress_port[3:0] ++ meta.rtt_bucket[4:0]);
        }
    }
}
#endif

#ifndef FG_TNA_NO_FEEDBACK
control RateFeedback(inout tna_headers_t hdr,
                     inout tna_egress_meta_t meta,
                     in egress_intrinsic_metadata_t eg_intr_md) {
    bit<32> excess;

    @hidden
    action compare_rate() {
        excess = hdr.fg.rate_kbps |-| meta.fair_rate_kbps;
    }

    @name(".set_port_feedback")
    action set_port_feedback(bit<32> fair_rate_kbps, bit<1> congested) {
        meta.fair_rate_kbps = fair_rate_kbps;
        meta.port_congested = congested;
    }

    @name(".port_feedback")
    table port_feedback {
        key = {
            eg_intr_md.egress_port : exact @name("egress_port");
        }
        actions = {
            set_port_feedback;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    apply {
        if (meta.bridge.fg_stampable == 1 && hdr.fg.kind == FG_KIND_DATA) {
            if (port_feedback.apply().hit) {
                /* rate > fair without a two-field compare: saturating subtract. */
                compare_rate();
                if (meta.fair_rate_kbps != 0) {
                    if (excess != 0) {
                        hdr.fg.rate_kbps = meta.fair_rate_kbps;
                        meta.fg_rewritten = 1;
                    }
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

#endif
