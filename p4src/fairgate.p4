/* fairgate.p4: the FairGate pipeline.
 *
 * ingress: sanity checks -> IPv4 routing -> L4 classification -> SYN
 *          admission -> arrival counters -> anomaly counter
 * egress:  departure, queue-depth and RTT telemetry -> rate feedback
 *          (min-stamping, congestion flag)
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

control FgIngress(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    InputSanity() sanity;
    Ipv4Routing() routing;
    L4Classify() classify;
    SynAdmission() admission;
    ArrivalTelemetry() arrivals;
    AnomalyCount() anomalies;

    apply {
        sanity.apply(hdr, meta, standard_metadata);
        if (meta.dropped == 0) {
            routing.apply(hdr, meta, standard_metadata);
        }
        if (meta.dropped == 0) {
            classify.apply(hdr, meta, standard_metadata);
        }
        if (meta.dropped == 0) {
            if (standard_metadata.egress_spec < FG_MAX_PORTS) {
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
    RateFeedback() feedback;

    apply {
        if (standard_metadata.egress_port < FG_MAX_PORTS) {
            departures.apply(hdr, meta, standard_metadata);
        }
        feedback.apply(hdr, meta, standard_metadata);
    }
}

V1Switch(FgParser(),
         FgVerifyChecksum(),
         FgIngress(),
         FgEgress(),
         FgComputeChecksum(),
         FgDeparser()) main;
