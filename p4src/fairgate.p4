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
 * them and docs/hardware.md maps them onto switch hardware. */
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
    SynAdmission() admission;
    ArrivalTelemetry() arrivals;
    AnomalyCount() anomalies;
    FiccrdArrival() ficcrd_arrival;
    FiccrdIngress() ficcrd;

    apply {
        sanity.apply(hdr, meta, standard_metadata);
        if (meta.dropped == 0) {
            ficcrd_arrival.apply(hdr, meta);
            routing.apply(hdr, meta, standard_metadata);
        }
        if (meta.dropped == 0) {
            classify.apply(hdr, meta, standard_metadata);
        }
        if (meta.dropped == 0) {
            if (standard_metadata.egress_spec < FG_MAX_PORTS) {
                if (hdr.tcp.isValid() || hdr.fg_rd.isValid()) {
                    ficcrd.apply(hdr, meta, standard_metadata);
                }
                if (hdr.tcp.isValid()) {
                    admission.apply(hdr, meta, standard_metadata);
                }
                if (meta.dropped == 0) {
                    arrivals.apply(meta, standard_metadata);
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
    DepartureTelemetry() departures;
    FiccrdEgress() ficcrd;
    RateFeedback() feedback;
    XcpFeedback() xcp;
    RateHeaderChecksum() udp_checksum;

    apply {
        if (standard_metadata.egress_port < FG_MAX_PORTS) {
            /* An RD clone never arrived: it is counted in ficcrd_edge_events only. */
            if (standard_metadata.instance_type != FG_INSTANCE_E2E_CLONE) {
                departures.apply(hdr, meta, standard_metadata);
            }
            /* TCP segments, RDs and RD clones (clones of TCP segments). */
            if (hdr.tcp.isValid() || hdr.fg_rd.isValid()) {
                ficcrd.apply(hdr, meta, standard_metadata);
            }
            if (hdr.fg_xcp.isValid()) {
                xcp.apply(hdr, meta, standard_metadata);
            }
        }
        feedback.apply(hdr, meta, standard_metadata);
        udp_checksum.apply(hdr, meta);
    }
}

V1Switch(FgParser(),
         FgVerifyChecksum(),
         FgIngress(),
         FgEgress(),
         FgComputeChecksum(),
         FgDeparser()) main;
