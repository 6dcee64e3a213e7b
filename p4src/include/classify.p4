/* L4 classification for the FairGate features: which packets carry a rate
 * header that may be stamped, and which TCP flag combinations are refused.
 *
 *   TCP SYN+FIN                      -> drop, FG_ANOMALY_TCP_SYN_FIN
 *   TCP SYN+RST                      -> drop, FG_ANOMALY_TCP_SYN_RST
 *   IPv4 fragment (MF or offset)     -> forwarded, never stamped, FG_ANOMALY_IPV4_FRAGMENT
 *   TCP/UDP header cut short         -> forwarded unchanged, FG_ANOMALY_L4_TRUNCATED
 *   rate header cut short (parser ran
 *   out of bytes, or UDP length too
 *   small for it)                    -> forwarded unchanged, FG_ANOMALY_FG_TRUNCATED
 *   version != FG_VERSION            -> forwarded unchanged, FG_ANOMALY_FG_BAD_VERSION
 *   kind 0 or > FG_KIND_MAX          -> forwarded unchanged, FG_ANOMALY_FG_BAD_KIND
 *   data with rate 0                 -> forwarded unchanged, FG_ANOMALY_FG_RATE_ZERO
 *   data with rate all-ones          -> stamped as usual, FG_ANOMALY_FG_RATE_UNLIMITED
 *   RD kind without room for fg_rd_t
 *   (parser or UDP length)           -> forwarded unchanged, FG_ANOMALY_FG_RD_TRUNCATED
 * A drop reason always wins; among informational reasons the later check wins.
 */
#ifndef FG_CLASSIFY_P4
#define FG_CLASSIFY_P4

#include "headers.p4"

control L4Classify(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    @hidden action note(bit<8> reason) {
        meta.anomaly = reason;
    }

    @hidden action reject(bit<8> reason) {
        mark_to_drop(standard_metadata);
        meta.dropped = 1;
        meta.anomaly = reason;
    }

    apply {
        bool fragment = hdr.ipv4.frag_offset != 0 || (hdr.ipv4.flags & 3w1) != 0;
        bool fg_port = hdr.udp.isValid()
                       && (hdr.udp.dst_port == FG_UDP_PORT || hdr.udp.src_port == FG_UDP_PORT);
        if (fragment) {
            note(FG_ANOMALY_IPV4_FRAGMENT);
        } else if (hdr.ipv4.protocol == IP_PROTO_TCP && !hdr.tcp.isValid()) {
            note(FG_ANOMALY_L4_TRUNCATED);
        } else if (hdr.ipv4.protocol == IP_PROTO_UDP && !hdr.udp.isValid()) {
            note(FG_ANOMALY_L4_TRUNCATED);
        }

        if (hdr.tcp.isValid() && (hdr.tcp.flags & TCP_FLAG_SYN) != 0) {
            if ((hdr.tcp.flags & TCP_FLAG_FIN) != 0) {
                reject(FG_ANOMALY_TCP_SYN_FIN);
            } else if ((hdr.tcp.flags & TCP_FLAG_RST) != 0) {
                reject(FG_ANOMALY_TCP_SYN_RST);
            }
        }

        meta.fg_stampable = 0;
        if (fg_port && !fragment) {
            if (!hdr.fg.isValid() || hdr.udp.length < 8 + FG_HEADER_BYTES) {
                note(FG_ANOMALY_FG_TRUNCATED);
            } else if (hdr.fg.version != FG_VERSION) {
                note(FG_ANOMALY_FG_BAD_VERSION);
            } else if (hdr.fg.kind == 0 || hdr.fg.kind > FG_KIND_MAX) {
                note(FG_ANOMALY_FG_BAD_KIND);
            } else if (hdr.fg.kind == FG_KIND_DATA && hdr.fg.rate_kbps == 0) {
                note(FG_ANOMALY_FG_RATE_ZERO);
            } else if ((hdr.fg.kind == FG_KIND_RD_FORWARD || hdr.fg.kind == FG_KIND_RD_BACKWARD)
                       && (!hdr.fg_rd.isValid()
                           || hdr.udp.length < 8 + FG_HEADER_BYTES + FG_RD_HEADER_BYTES)) {
                note(FG_ANOMALY_FG_RD_TRUNCATED);
            } else {
                meta.fg_stampable = 1;
                if (hdr.fg.kind == FG_KIND_DATA && hdr.fg.rate_kbps == FG_RATE_UNLIMITED) {
                    note(FG_ANOMALY_FG_RATE_UNLIMITED);
                }
            }
        }
    }
}

#endif
