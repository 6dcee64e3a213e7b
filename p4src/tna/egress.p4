/* TNA egress features: DepartureTelemetry (../include/telemetry.p4) and
 * RateFeedback (../include/rate_feedback.p4), same control-plane names. */
#ifndef FG_TNA_EGRESS_P4
#define FG_TNA_EGRESS_P4

#include "types.p4"

#ifndef FG_TNA_NO_TELEMETRY
/* The bucket lookups, at the start of egress (no side effects: every packet
 * looks up); DepartureTelemetry counts at the end. Two controls because
 * Tofino 1 places a control-flow sequence in program order (ficcrd.p4): the
 * counts after the lookups would otherwise hold back everything after them. */
control DepartureBuckets(in tna_headers_t hdr,
                         inout tna_egress_meta_t meta,
                         in egress_intrinsic_metadata_t eg_intr_md) {
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
        queue_buckets.apply();
        rtt_buckets.apply();
    }
}

control DepartureTelemetry(in tna_headers_t hdr,
                           in tna_egress_meta_t meta,
                           in egress_intrinsic_metadata_t eg_intr_md) {
    @name(".port_departures")
    Counter<bit<64>, bit<4>>(FG_MAX_PORTS, CounterType_t.PACKETS_AND_BYTES) port_departures;

    @name(".queue_depth_hist")
    Counter<bit<32>, bit<9>>(FG_HIST_ENTRIES, CounterType_t.PACKETS) queue_depth_hist;

    @name(".rtt_hist")
    Counter<bit<32>, bit<9>>(FG_HIST_ENTRIES, CounterType_t.PACKETS) rtt_hist;

    apply {
        port_departures.count(eg_intr_md.egress_port[3:0]);
        queue_depth_hist.count(eg_intr_md.egress_port[3:0] ++ meta.queue_bucket[4:0]);
        if (meta.bridge.fg_stampable == 1 && hdr.fg.kind == FG_KIND_DATA && hdr.fg.rtt_us != 0) {
            rtt_hist.count(eg_intr_md.egress_port[3:0] ++ meta.rtt_bucket[4:0]);
        }
    }
}
#endif

#ifndef FG_TNA_NO_FEEDBACK
control RateFeedback(inout tna_headers_t hdr,
                     inout tna_egress_meta_t meta,
                     in egress_intrinsic_metadata_t eg_intr_md) {

    @name(".set_port_feedback")
    action set_port_feedback(bit<32> fair_rate_kbps, bit<1> congested) {
        meta.fair_rate_kbps = fair_rate_kbps;
        meta.port_congested = congested;
        meta.port_congested_flag = (bit<8>)congested;  /* FG_FLAG_CONGESTED is bit 0 */
        meta.fb_hit = 1;
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

    /* Looked up and compared for every packet (no side effects); RateWrite
     * writes the header for the data packets this applies to, so that no
     * condition here delays FICCRD's tables. */
    apply {
        port_feedback.apply();
        if (meta.bridge.fg_stampable == 1 && hdr.fg.kind == FG_KIND_DATA) {
            meta.fb_data = 1;
        }
    }
}
#endif

/* The one write of the rate header in egress: FICCRD's ER for RDs (and
 * FG_RATE_UNLIMITED in a new RD), the fair rate for data packets. One writer,
 * so that RateFeedback and FICCRD's core compare the header as it arrived
 * side by side instead of one after the other (v1model writes in place). */
control RateWrite(inout tna_headers_t hdr,
                  inout tna_egress_meta_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md) {
    /* The clone of a flow's k-th packet becomes a forward RD (v1model: build_rd
     * in FiccrdEgress), with FG_RATE_UNLIMITED or, on TNA, its own queue's ER. */
    @name(".build_rd")
    action build_rd() {
        hdr.ipv4.ihl = 5;
        hdr.ipv4.total_len = FG_RD_IP_BYTES;
        hdr.ipv4.protocol = IP_PROTO_UDP;
        hdr.udp.setValid();
        hdr.udp.src_port = FG_UDP_PORT;
        hdr.udp.dst_port = FG_UDP_PORT;
        hdr.udp.length = FG_RD_IP_BYTES - 20;
        hdr.udp.checksum = 0;
        hdr.fg.setValid();
        hdr.fg.version = FG_VERSION;
        hdr.fg.kind = FG_KIND_RD_FORWARD;
        hdr.fg.flags = 0;
        hdr.fg.reserved = 0;
        hdr.fg.seq = 0;
        hdr.fg.ack = 0;
        hdr.fg.ts_us = meta.fc.stamp_us;
        hdr.fg.ts_echo_us = 0;
        hdr.fg.rtt_us = meta.rd_mirror.rtt_us;
        hdr.fg.rate_kbps = FG_RATE_UNLIMITED;
        hdr.fg_rd.setValid();
        hdr.fg_rd.flow_key = meta.rd_mirror.flow_key;
        hdr.fg_rd.apr_kbps = meta.rd_mirror.apr_kbps;
        meta.ipv4_csum_update = 1;
    }
    @hidden
    action build_rd_at_er() {
        build_rd();
        hdr.fg.rate_kbps = meta.er_rate;
    }
    @hidden
    action lower_to_er() {
        hdr.fg.rate_kbps = min(hdr.fg.rate_kbps, meta.er_rate);
        meta.fg_rewritten = 1;
        meta.udp_csum_update = meta.udp_has_csum;
    }
#ifndef FG_TNA_NO_FEEDBACK
    /* v1model: rate = fair if rate > fair (fair != 0), and the congestion
     * flag; an unchanged field gets the checksum update of the same value. */
    @hidden
    action lower_to_fair() {
        hdr.fg.rate_kbps = min(hdr.fg.rate_kbps, meta.fair_rate_kbps);
        hdr.fg.flags = hdr.fg.flags | meta.port_congested_flag;
        meta.fg_rewritten = 1;
        meta.udp_csum_update = meta.udp_has_csum;
    }
    @hidden
    action flag_congested() {
        hdr.fg.flags = hdr.fg.flags | meta.port_congested_flag;
        meta.fg_rewritten = 1;
        meta.udp_csum_update = meta.udp_has_csum;
    }
#endif

    apply {
        if (meta.is_rd_clone == 1) {
            if (meta.er_lower == 1) {
                build_rd_at_er();
            } else {
                build_rd();
            }
        } else if (meta.er_lower == 1) {
            /* v1model: if (MAPR x DPF >> 10 < ER) ER = MAPR x DPF >> 10 */
            lower_to_er();
#ifndef FG_TNA_NO_FEEDBACK
        } else if (meta.fb_data == 1 && meta.fb_hit == 1) {
            /* RateFeedback (v1model: rate_feedback.p4) */
            if (meta.fair_rate_kbps != 0) {
                lower_to_fair();
            } else {
                flag_congested();
            }
#endif
        }
    }
}

#endif
