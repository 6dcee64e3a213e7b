/* fairgate.p4: the FairGate pipeline.
 *
 * ingress: sanity checks -> IPv4 routing -> L4 classification -> FICCRD
 *          roles and RD turnaround -> SYN admission -> arrival counters ->
 *          anomaly counter
 * egress:  departure, queue-depth and RTT telemetry -> FICCRD (RD emission,
 *          core MAPR/ER, RD consumption, receive-window rewriting) -> XCP
 *          feedback (min-stamping H_feedback, its UDP checksum) -> rate
 *          feedback (min-stamping, congestion flag) -> incremental UDP
 *          checksum update of a rewritten rate header
 * Each feature lives in its own include; docs/data-plane.md walks through
 * them and docs/hardware.md maps them onto switch hardware.
 *
 * Cost variants (`make build` compiles none of them): -DFG_NO_FICCRD,
 * -DFG_NO_XCP, -DFG_NO_ADMISSION, -DFG_NO_TELEMETRY, -DFG_NO_FEEDBACK each
 * leave one feature out, so that `benchmarks/bench_pipeline.py --features`
 * can measure what each costs on BMv2 (docs/performance.md "Pipeline"). */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"
#include "include/parser.p4"
#include "include/sanity.p4"
#include "include/routing.p4"
#include "include/classify.p4"
#include "include/admission.p4"
#include "include/telemetry.p4"
#include "include/rate_feedback.p4"
#include "include/ficcrd.p4"
#include "include/xcp.p4"

control FgIngress(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    InputSanity() sanity;
    Ipv4Routing() routing;
    L4Classify() classify;
#ifndef FG_NO_ADMISSION
    SynAdmission() admission;
#endif
#ifndef FG_NO_TELEMETRY
    ArrivalTelemetry() arrivals;
#endif
    AnomalyCount() anomalies;
#ifndef FG_NO_FICCRD
    FiccrdArrival() ficcrd_arrival;
    FiccrdIngress() ficcrd;
#endif

    apply {
        sanity.apply(hdr, meta, standard_metadata);
        if (meta.dropped == 0) {
#ifndef FG_NO_FICCRD
            ficcrd_arrival.apply(hdr, meta);
#endif
            routing.apply(hdr, meta, standard_metadata);
        }
        if (meta.dropped == 0) {
            classify.apply(hdr, meta, standard_metadata);
        }
        if (meta.dropped == 0) {
            if (standard_metadata.egress_spec < FG_MAX_PORTS) {
                /* Nested so that other traffic (UDP) passes one condition
                 * here: each costs on BMv2 (docs/performance.md "Pipeline"). */
                if (hdr.tcp.isValid() || hdr.fg_rd.isValid()) {
#ifndef FG_NO_FICCRD
                    ficcrd.apply(hdr, meta, standard_metadata);
#endif
#ifndef FG_NO_ADMISSION
                    if (hdr.tcp.isValid()) {
                        admission.apply(hdr, meta, standard_metadata);  /* may drop a SYN */
                    }
#endif
#ifndef FG_NO_TELEMETRY
                    if (meta.dropped == 0) {
                        arrivals.apply(meta, standard_metadata);
                    }
                } else {
                    arrivals.apply(meta, standard_metadata);
#endif
                }
            } else if (meta.anomaly == FG_ANOMALY_NONE) {
                meta.anomaly = FG_ANOMALY_PORT_NOT_COUNTED;
            }
        }
        anomalies.apply(meta);
    }
}

control FgEgress(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
#ifndef FG_NO_TELEMETRY
    DepartureTelemetry() departures;
#endif
#ifndef FG_NO_FICCRD
    FiccrdEgress() ficcrd;
#endif
#ifndef FG_NO_FEEDBACK
    RateFeedback() feedback;
#endif
#ifndef FG_NO_XCP
    XcpFeedback() xcp;
#endif
    RateHeaderChecksum() udp_checksum;

    apply {
        if (standard_metadata.egress_port < FG_MAX_PORTS) {
#ifndef FG_NO_TELEMETRY
            /* An RD clone never arrived: it is counted in ficcrd_edge_events only. */
            if (standard_metadata.instance_type != FG_INSTANCE_E2E_CLONE) {
                departures.apply(hdr, meta, standard_metadata);
            }
#endif
#ifndef FG_NO_FICCRD
            /* TCP segments, RDs and RD clones (clones of TCP segments). */
            if (hdr.tcp.isValid() || hdr.fg_rd.isValid()) {
                ficcrd.apply(hdr, meta, standard_metadata);
            }
#endif
#ifndef FG_NO_XCP
            if (hdr.fg_xcp.isValid()) {
                xcp.apply(hdr, meta, standard_metadata);
            }
#endif
        }
#ifndef FG_NO_FEEDBACK
        feedback.apply(hdr, meta, standard_metadata);
#endif
        udp_checksum.apply(hdr, meta);
    }
}

V1Switch(FgParser(),
         FgVerifyChecksum(),
         FgIngress(),
         FgEgress(),
         FgComputeChecksum(),
         FgDeparser()) main;
