/* Input sanity: IPv4-level checks every FairGate program applies before
 * routing, and the per-reason input_anomalies counter.
 *
 *   not IPv4 / runt frame          -> drop, FG_ANOMALY_NOT_IPV4
 *   IPv4 version != 4, truncated
 *   header or options, total
 *   length < header length         -> drop, FG_ANOMALY_IPV4_MALFORMED
 *   ihl < 5                        -> drop, FG_ANOMALY_IPV4_BAD_IHL
 *   total length > frame - 14      -> drop, FG_ANOMALY_IPV4_LEN_OVER_FRAME (RFC 1812 5.2.2)
 *   bad IPv4 header checksum       -> drop, FG_ANOMALY_IPV4_BAD_CHECKSUM (RFC 1812)
 *   TTL <= 1 (would reach 0)       -> drop, FG_ANOMALY_TTL_EXPIRED (no ICMP is sent)
 *   IPv4 options                   -> forwarded normally, FG_ANOMALY_IPV4_OPTIONS
 * Frames longer than the total length (trailing bytes) are dealt with in
 * classify.p4.
 */
#ifndef FG_SANITY_P4
#define FG_SANITY_P4

#include "headers.p4"

control InputSanity(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    @hidden action reject(bit<8> reason) {
        mark_to_drop(standard_metadata);
        meta.dropped = 1;
        meta.anomaly = reason;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            if (hdr.ethernet.isValid() && hdr.ethernet.ether_type == ETHERTYPE_IPV4) {
                reject(FG_ANOMALY_IPV4_MALFORMED);
            } else {
                reject(FG_ANOMALY_NOT_IPV4);
            }
        } else if (hdr.ipv4.version != 4) {
            reject(FG_ANOMALY_IPV4_MALFORMED);
        } else if (hdr.ipv4.ihl < 5) {
            reject(FG_ANOMALY_IPV4_BAD_IHL);
        } else if ((hdr.ipv4.ihl > 5 && !hdr.ipv4_options.isValid())
                   || hdr.ipv4.total_len < ((bit<16>)hdr.ipv4.ihl << 2)) {
            reject(FG_ANOMALY_IPV4_MALFORMED);
        } else if ((bit<32>)hdr.ipv4.total_len + FG_ETH_HEADER_BYTES
                   > standard_metadata.packet_length) {
            reject(FG_ANOMALY_IPV4_LEN_OVER_FRAME);
        } else if (standard_metadata.checksum_error == 1) {
            reject(FG_ANOMALY_IPV4_BAD_CHECKSUM);
        } else if (hdr.ipv4.ttl <= 1) {
            reject(FG_ANOMALY_TTL_EXPIRED);
        } else if (hdr.ipv4_options.isValid()) {
            meta.anomaly = FG_ANOMALY_IPV4_OPTIONS;
        }
    }
}

/* One count per packet, for its decisive reason (hardware allows one access
 * per counter array per packet). Applied last in ingress. */
control AnomalyCount(inout metadata_t meta) {
    @name(".input_anomalies")
    counter(FG_ANOMALY_ENTRIES, CounterType.packets) input_anomalies;

    /* The index is set outside the action: computed in it, p4c would pass
     * the counter a temporary (a field BMv2 resets for every packet,
     * docs/performance.md "Pipeline"); meta.index is shared. */
    @hidden action count_anomaly() {
        input_anomalies.count(meta.index);
    }

    apply {
        if (meta.anomaly != FG_ANOMALY_NONE) {
            meta.index = (bit<32>)meta.anomaly;
            count_anomaly();
        }
    }
}

#endif
