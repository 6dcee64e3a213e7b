/* forward.p4: plain IPv4 forwarding, FairGate's first pipeline and the
 * baseline `make bench` compares fairgate.p4 against. Same parser, sanity
 * checks and anomaly counter as fairgate.p4; no rate header processing,
 * telemetry or admission. */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"
#include "include/parser.p4"
#include "include/sanity.p4"
#include "include/routing.p4"

control ForwardIngress(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    InputSanity() sanity;
    Ipv4Routing() routing;
    AnomalyCount() anomalies;

    apply {
        sanity.apply(hdr, meta, standard_metadata);
        if (meta.dropped == 0) {
            routing.apply(hdr, meta, standard_metadata);
        }
        anomalies.apply(meta);
    }
}

control ForwardEgress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    apply { }
}

V1Switch(FgParser(),
         FgVerifyChecksum(),
         ForwardIngress(),
         ForwardEgress(),
         FgComputeChecksum(),
         FgDeparser()) main;
