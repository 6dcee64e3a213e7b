/* L4 classification for the FairGate features: which packets carry a rate
 * header that may be stamped, and which TCP flag combinations are refused.
 *
 *   TCP data offset < 5 or past
 *   the IPv4 payload                 -> drop, FG_ANOMALY_TCP_BAD_OFFSET
 *   TCP SYN+FIN                      -> drop, FG_ANOMALY_TCP_SYN_FIN
 *   TCP SYN+RST                      -> drop, FG_ANOMALY_TCP_SYN_RST
 *   bytes past the IPv4 total length
 *   in a frame > FG_ETH_MIN_FRAME_BYTES
 *                                    -> forwarded, FG_ANOMALY_TRAILING_BYTES; the
 *                                       extra bytes are carried, never parsed, and a
 *                                       rate header in such a frame is never stamped
 *                                       (TCP is processed as usual: it lies wholly
 *                                       inside the total length)
 *   IPv4 fragment (MF or offset)     -> forwarded, never stamped, FG_ANOMALY_IPV4_FRAGMENT
 *   UDP length != IPv4 payload       -> forwarded unchanged, FG_ANOMALY_UDP_BAD_LENGTH
 *   TCP/UDP header cut short (by
 *   the frame or the total length)   -> forwarded unchanged, FG_ANOMALY_L4_TRUNCATED
 *   rate header cut short (the UDP
 *   length does not hold it)         -> forwarded unchanged, FG_ANOMALY_FG_TRUNCATED
 *   version != FG_VERSION            -> forwarded unchanged, FG_ANOMALY_FG_BAD_VERSION
 *   kind 0 or > FG_KIND_MAX          -> forwarded unchanged, FG_ANOMALY_FG_BAD_KIND
 *   data with rate 0                 -> forwarded unchanged, FG_ANOMALY_FG_RATE_ZERO
 *   data with rate all-ones          -> stamped as usual, FG_ANOMALY_FG_RATE_UNLIMITED
 *   RD kind without room for fg_rd_t
 *   in the UDP length                -> forwarded unchanged, FG_ANOMALY_FG_RD_TRUNCATED
 *   XCP kind without room for
 *   fg_xcp_t in the UDP length       -> forwarded unchanged, FG_ANOMALY_FG_XCP_TRUNCATED
 * A drop reason always wins; among informational reasons the later check wins.
 * The parser already refused to read past the IPv4 total length and the UDP
 * length (parser.p4), so a valid fg header lies inside both.
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

    /* A well-formed rate header: stampable, and the words a switch may
     * rewrite as they arrived (RateHeaderChecksum). Two call sites, one
     * action. */
    @hidden action stampable() {
        meta.fg_stampable = 1;
        meta.fg_csum_words = (hdr.fg.rate_kbps >> 16) + (hdr.fg.rate_kbps & 0xffff)
                             + ((bit<32>)hdr.fg.flags << 8) + (bit<32>)hdr.fg.kind;
    }

    apply {
        /* Conditions only, no locals: on BMv2 a local is a field reset per
         * packet, a statement between conditions a hidden table apply, and
         * every operator of a condition costs (docs/performance.md
         * "Pipeline"). So a rate-header datagram, the traffic every switch
         * carries, takes a short path of its own. */
        bool fragment = hdr.ipv4.frag_offset != 0 || (hdr.ipv4.flags & 3w1) != 0;
        /* Bytes past the IPv4 total length (sanity.p4 dropped frames
         * shorter than it); Ethernet padding up to the minimum frame is not
         * counted. A rate-header frame is always longer than that. */
        bool trailing = standard_metadata.packet_length
                        != (bit<32>)hdr.ipv4.total_len + FG_ETH_HEADER_BYTES;
        if (hdr.fg.isValid() && (hdr.ipv4.flags & 3w1) == 0) {
            /* The parser extracts fg only from UDP to or from FG_UDP_PORT
             * whose length is the IPv4 payload's, and with no fragment
             * offset; without MF it is no fragment either. So none of the
             * L4 checks of the other branch applies, and the datagram is a
             * rate-header datagram: the checks below pick its anomaly, the
             * first for the commonest case, data that is well formed. */
            if (hdr.fg.kind == FG_KIND_DATA && hdr.fg.version == FG_VERSION
                && hdr.fg.rate_kbps != 0 && !trailing) {
                stampable();
                if (hdr.fg.rate_kbps == FG_RATE_UNLIMITED) {
                    note(FG_ANOMALY_FG_RATE_UNLIMITED);
                }
            } else {
                if (trailing) {
                    note(FG_ANOMALY_TRAILING_BYTES);
                }
                if (hdr.fg.version != FG_VERSION) {
                    note(FG_ANOMALY_FG_BAD_VERSION);
                } else if (hdr.fg.kind == 0 || hdr.fg.kind > FG_KIND_MAX) {
                    note(FG_ANOMALY_FG_BAD_KIND);
                } else if (hdr.fg.kind == FG_KIND_DATA && hdr.fg.rate_kbps == 0) {
                    note(FG_ANOMALY_FG_RATE_ZERO);
                } else if ((hdr.fg.kind == FG_KIND_RD_FORWARD || hdr.fg.kind == FG_KIND_RD_BACKWARD)
                           && !hdr.fg_rd.isValid()) {
                    note(FG_ANOMALY_FG_RD_TRUNCATED);
                } else if ((hdr.fg.kind == FG_KIND_XCP_DATA || hdr.fg.kind == FG_KIND_XCP_ACK)
                           && !hdr.fg_xcp.isValid()) {
                    note(FG_ANOMALY_FG_XCP_TRUNCATED);
                } else if (meta.anomaly == FG_ANOMALY_TRAILING_BYTES) {
                    /* noted above (a rate-header frame is always longer than
                     * FG_ETH_MIN_FRAME_BYTES) and not overwritten since */
                } else {
                    /* well formed, not data: kind 2..8 */
                    stampable();
                }
            }
        } else {
            if (trailing && standard_metadata.packet_length > FG_ETH_MIN_FRAME_BYTES) {
                note(FG_ANOMALY_TRAILING_BYTES);
            }
            if (hdr.tcp.isValid()
                && (hdr.tcp.data_offset < 5
                    || ((bit<16>)hdr.tcp.data_offset << 2)
                       > hdr.ipv4.total_len - ((bit<16>)hdr.ipv4.ihl << 2))) {
                reject(FG_ANOMALY_TCP_BAD_OFFSET);
            } else if (fragment) {
                note(FG_ANOMALY_IPV4_FRAGMENT);
            } else if (hdr.udp.isValid()
                       && hdr.udp.length != hdr.ipv4.total_len - ((bit<16>)hdr.ipv4.ihl << 2)) {
                note(FG_ANOMALY_UDP_BAD_LENGTH);  /* the parser left its payload alone */
            } else if (hdr.ipv4.protocol == IP_PROTO_TCP && !hdr.tcp.isValid()) {
                note(FG_ANOMALY_L4_TRUNCATED);
            } else if (hdr.ipv4.protocol == IP_PROTO_UDP && !hdr.udp.isValid()) {
                note(FG_ANOMALY_L4_TRUNCATED);
            }

            if (hdr.tcp.isValid() && (hdr.tcp.flags & TCP_FLAG_SYN) != 0 && meta.dropped == 0) {
                if ((hdr.tcp.flags & TCP_FLAG_FIN) != 0) {
                    reject(FG_ANOMALY_TCP_SYN_FIN);
                } else if ((hdr.tcp.flags & TCP_FLAG_RST) != 0) {
                    reject(FG_ANOMALY_TCP_SYN_RST);
                }
            }

            /* UDP to or from FG_UDP_PORT, not a fragment, the UDP length the
             * IPv4 payload length, and still no rate header (fg is invalid
             * here, or MF is set and this is a fragment): the parser found
             * no room for it. meta.fg_stampable starts at 0. */
            if (hdr.udp.isValid()
                && (hdr.udp.dst_port == FG_UDP_PORT || hdr.udp.src_port == FG_UDP_PORT)
                && !fragment
                && hdr.udp.length == hdr.ipv4.total_len - ((bit<16>)hdr.ipv4.ihl << 2)) {
                note(FG_ANOMALY_FG_TRUNCATED);
            }
        }
    }
}

#endif
