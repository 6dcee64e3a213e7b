/* fairgate_tna.p4: the FairGate pipeline for Intel Tofino (TNA), the
 * counterpart of ../fairgate.p4 (v1model). Header layouts and constants come
 * from the same include files (../include/headers.p4, defines.p4);
 * docs/hardware.md puts each feature's v1model and TNA code side by side and
 * lists the measured resources.
 *
 * ingress: sanity checks -> IPv4 routing -> L4 classification -> FICCRD
 *          roles and RD turnaround -> SYN admission -> arrival counters ->
 *          anomaly counter
 * egress:  departure, queue-depth and RTT telemetry -> FICCRD (RD emission,
 *          core MAPR/ER, RD consumption, receive-window rewriting) -> rate
 *          feedback (min-stamping, congestion flag) -> XCP's per-packet
 *          feedback (xcp.p4)
 *
 * Features can be compiled out to measure what each costs
 * (python -m fairgate_p4.tna_resources): -DFG_TNA_NO_TELEMETRY,
 * -DFG_TNA_NO_ADMISSION, -DFG_TNA_NO_FEEDBACK, -DFG_TNA_NO_FICCRD, -DFG_TNA_NO_XCP. */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

/* Tofino 1's egress parser always extracts >= 34 bytes here (bridge + Ethernet, or
 * mirror header + Ethernet + IPv4), so the compiler's minimum-parse-depth padding
 * loop (and its warning) is not needed; said here so every compile of this file,
 * not only make build-tna, is warning-free. */
@command_line("--disable-parse-min-depth-limit")
#include "types.p4"
#include "parser.p4"
#include "ingress.p4"
#include "egress.p4"
#ifndef FG_TNA_NO_FICCRD
#include "ficcrd.p4"
#endif
#ifndef FG_TNA_NO_XCP
#include "xcp.p4"
#endif

control FgIngress(inout tna_headers_t hdr,
                  inout tna_ingress_meta_t meta,
                  in ingress_intrinsic_metadata_t ig_intr_md,
                  in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                  inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    InputSanity() sanity;
    Ipv4Routing() routing;
    L4Classify() classify;
    AnomalyCount() anomalies;
#ifndef FG_TNA_NO_ADMISSION
    SynAdmission() admission;
#endif
#ifndef FG_TNA_NO_TELEMETRY
    ArrivalTelemetry() arrivals;
#endif
#ifndef FG_TNA_NO_FICCRD
    FiccrdIngress() ficcrd;
#endif

    @hidden
    action start_bridge() {
        meta.bridge.setValid();
        meta.bridge.kind = FG_TNA_BRIDGED;
        meta.bridge.fg_stampable = 0;
        meta.bridge.fc_source = 0;
        meta.bridge.fc_edge = 0;
        meta.bridge.fc_rd_valid = 0;
        meta.bridge.fc_turned = 0;
        meta.bridge.fc_consume = 0;
        meta.bridge.fc_queue_here = 0;
        meta.bridge.tcp_wscale_seen = meta.tcp_wscale_seen;
        meta.bridge.fc_rd_interval = 0;
        meta.bridge.fc_rtt_min_us = 0;
        meta.bridge.fc_fkey = 0;
        meta.bridge.pad_fg_stampable = 0;
        meta.bridge.pad_fc_source = 0;
        meta.bridge.pad_fc_edge = 0;
        meta.bridge.pad_fc_rd_valid = 0;
        meta.bridge.pad_fc_turned = 0;
        meta.bridge.pad_fc_consume = 0;
        meta.bridge.pad_fc_queue_here = 0;
        meta.bridge.pad_tcp_wscale_seen = 0;
        meta.bridge.pad0 = 0;
        meta.bridge.fc_edge_port = 0;
        meta.bridge.pad1 = 0;
        meta.bridge.fc_queue_port = 0;
        meta.bridge.tcp_wscale = meta.tcp_wscale;
        /* FiccrdArrival: who sent it (an RD turnaround goes back there). */
        meta.fc_prev_mac = hdr.ethernet.src_addr;
        /* InputSanity checks the TTL as it arrived; routing, before it in this
         * apply, decrements hdr.ipv4.ttl. */
        meta.ipv4_ttl_in = hdr.ipv4.ttl;
    }

    @hidden
    action take_sanity() { meta.anomaly = meta.sanity_anomaly; }
    @hidden
    action take_no_route() { meta.anomaly = FG_ANOMALY_NO_ROUTE; }
    @hidden
    action take_fg() { meta.anomaly = meta.fg_anomaly; }
    @hidden
    action take_syn() { meta.anomaly = meta.syn_anomaly; }
    @hidden
    action take_l4() { meta.anomaly = meta.l4_anomaly; }

    /* fairgate.p4's precedence of the anomaly counted: a drop reason of
     * sanity, then no route, then the rate header, TCP flags, L4, and last
     * sanity's note (IPv4 options) or none; one TCAM lookup, first match wins. */
    @hidden
    table anomaly_precedence {
        key = {
            meta.sanity_drop : ternary;
            meta.no_route    : ternary;
            meta.fg_anomaly  : ternary;
            meta.syn_anomaly : ternary;
            meta.l4_anomaly  : ternary;
        }
        actions = {
            take_sanity;
            take_no_route;
            take_fg;
            take_syn;
            take_l4;
        }
        const default_action = take_fg();
        size = 8;
        const entries = {
            (1, _, _, _, _) : take_sanity();
            (_, 1, _, _, _) : take_no_route();
            (_, _, FG_ANOMALY_NONE, FG_ANOMALY_NONE, FG_ANOMALY_NONE) : take_sanity();
            (_, _, FG_ANOMALY_NONE, FG_ANOMALY_NONE, _) : take_l4();
            (_, _, FG_ANOMALY_NONE, _, _) : take_syn();
        }
    }

    apply {
        /* Routing, classification and sanity run side by side (each writes
         * its own verdict); anomaly_precedence then chooses the one counted.
         * Tofino 1 places a control-flow sequence in program order (an item
         * never in an earlier stage than the one before it): routing and the
         * one-step classification first, sanity's three-step chain after them,
         * FICCRD before the precedence (docs/hardware.md, "Fitting FICCRD"). */
        start_bridge();
        routing.apply(hdr, meta, ig_dprsr_md, ig_tm_md);
        classify.apply(hdr, meta, ig_dprsr_md);
        sanity.apply(hdr, meta, ig_dprsr_md);
#ifndef FG_TNA_NO_FICCRD
        /* FICCRD's roles and turnaround do not wait for the verdicts above
         * (fairgate.p4 runs it only for packets not dropped): what it does to a
         * packet that is dropped anyway is lost with it, and this way its
         * tables follow routing instead of the admission chain. Admission only
         * sees TCP, FICCRD moves only UDP RDs, so the two do not interact. */
        if (ig_tm_md.ucast_egress_port < FG_MAX_PORTS && (hdr.tcp.isValid() || hdr.fg_rd.isValid())) {
            ficcrd.apply(hdr, meta, ig_intr_md, ig_tm_md);
        }
#endif
        anomaly_precedence.apply();
        if (meta.sanity_drop == 0 && meta.no_route == 0 && meta.syn_drop == 0) {
            if (ig_tm_md.ucast_egress_port < FG_MAX_PORTS) {
#ifndef FG_TNA_NO_ADMISSION
                /* Before FICCRD here (after it in fairgate.p4): admission only
                 * sees TCP, FICCRD only moves UDP RDs to another port. */
                if (hdr.tcp.isValid()) {
                    admission.apply(hdr, meta, ig_dprsr_md, ig_tm_md);
                }
#endif
#ifndef FG_TNA_NO_TELEMETRY
                if (meta.meter_drop == 0) {
                    arrivals.apply(ig_tm_md);
                }
#endif
            } else if (meta.anomaly == FG_ANOMALY_NONE) {
                meta.anomaly = FG_ANOMALY_PORT_NOT_COUNTED;
            }
        }
        anomalies.apply(meta);
    }
}

control FgEgress(inout tna_headers_t hdr,
                 inout tna_egress_meta_t meta,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                 inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
#ifndef FG_TNA_NO_TELEMETRY
    DepartureBuckets() buckets;
    DepartureTelemetry() departures;
#endif
#ifndef FG_TNA_NO_FICCRD
    FiccrdEgress() ficcrd;
#endif
#ifndef FG_TNA_NO_FEEDBACK
    RateFeedback() feedback;
#endif
#ifndef FG_TNA_NO_XCP
    XcpFeedback() xcp;
#endif

#ifdef FG_TNA_NO_FICCRD
    RateWrite() rate_write;
#endif

    /* Tofino 1 places a control-flow sequence in program order (ficcrd.p4):
     * shallow lookups first, XCP and FICCRD as the two arms of one branch
     * (their packets never overlap: XCP kinds are neither TCP nor RDs), so
     * that their chains run side by side, the counters last. */
    apply {
#ifndef FG_TNA_NO_TELEMETRY
        buckets.apply(hdr, meta, eg_intr_md);
#endif
#ifndef FG_TNA_NO_FEEDBACK
        /* Feedback only stamps data packets, FICCRD only RDs and TCP; both
         * leave the rate itself to RateWrite, the one writer of rate_kbps. */
        feedback.apply(hdr, meta, eg_intr_md);
#endif
        /* A UDP checksum of 0 means none and stays 0 when the rate header is
         * rewritten (v1model tests it after the rewrite); RateWrite copies it. */
        if (hdr.udp.isValid() && hdr.udp.checksum != 0) {
            meta.udp_has_csum = 1;
        }
#if !defined(FG_TNA_NO_XCP) && !defined(FG_TNA_NO_FICCRD)
        if (hdr.fg_xcp.isValid()) {
            /* RateWrite has nothing to do for an XCP packet (no RD, no DATA) */
            xcp.apply(hdr, meta, eg_intr_md);
        } else {
            /* Not behind a further condition: FICCRD gates each side effect
             * itself (its roles, the port range). It applies RateWrite
             * before its counters. */
            ficcrd.apply(hdr, meta, eg_intr_md, eg_prsr_md, eg_dprsr_md);
        }
#elif !defined(FG_TNA_NO_XCP)
        xcp.apply(hdr, meta, eg_intr_md);
        rate_write.apply(hdr, meta, eg_intr_md);
#elif !defined(FG_TNA_NO_FICCRD)
        ficcrd.apply(hdr, meta, eg_intr_md, eg_prsr_md, eg_dprsr_md);
#else
        rate_write.apply(hdr, meta, eg_intr_md);
#endif
#ifndef FG_TNA_NO_TELEMETRY
        /* An RD clone never arrived: it is counted in ficcrd_edge_events only. */
        if (eg_intr_md.egress_port < FG_MAX_PORTS && meta.is_rd_clone == 0) {
            departures.apply(hdr, meta, eg_intr_md);
        }
#endif
    }
}

Pipeline(FgTnaIngressParser(),
         FgIngress(),
         FgTnaIngressDeparser(),
         FgTnaEgressParser(),
         FgEgress(),
         FgTnaEgressDeparser()) pipe;

Switch(pipe) main;
