/* Parser, checksum controls and deparser shared by every FairGate program.
 *
 * Parsing rules (the ingress acts on what the parser leaves valid):
 *  - non-IPv4 frames: only ethernet is valid (ingress drops them);
 *  - IPv4 with version != 4 or ihl < 5: ipv4 valid, nothing after it (dropped);
 *  - IPv4 options (ihl 6..15) are extracted as one varbit and re-emitted as is;
 *  - non-first fragments (frag_offset != 0) get no L4 parsing;
 *  - nothing is parsed past the IPv4 total length: a TCP or UDP header that
 *    does not fit in the IPv4 payload stops the parser (PacketTooShort), so
 *    bytes after the total length (Ethernet padding, junk) are never read as
 *    a header and leave the switch as they came;
 *  - TCP with a data offset below 5 or past the IPv4 payload stops the parser
 *    with TcpBadOffset (ingress drops it);
 *  - UDP whose length is not the IPv4 payload length stops the parser with
 *    UdpBadLength (forwarded unchanged, never stamped);
 *  - UDP to or from FG_UDP_PORT carries the rate header, extracted only when
 *    the UDP length holds it; RD kinds carry fg_rd_t after it, again only
 *    when the UDP length holds it (otherwise PacketTooShort and the bytes stay
 *    payload);
 *  - TCP options are parsed only on SYN segments (window scale), one byte at
 *    a time into tcp_opts so that they are re-emitted unchanged; the walk is
 *    bounded by the data offset, itself bounded by the IPv4 payload, so a
 *    bogus option length cannot run past either.
 * v1model does not drop on a parser error: ingress sees parser_error and
 * acts on it (sanity.p4, classify.p4). The frame length itself (IPv4 total
 * length vs frame) is checked in ingress (sanity.p4, classify.p4).
 */
#ifndef FG_PARSER_P4
#define FG_PARSER_P4

#include "headers.p4"

/* Parser errors FairGate adds; ingress maps them to FG_ANOMALY_* reasons. */
error {
    TcpBadOffset,
    UdpBadLength
}

parser FgParser(packet_in pkt,
                out headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    /* IPv4 payload bytes (total length - header): the L4 parse stays inside.
     * A total length below the header wraps this around; sanity drops such
     * packets before anything acts on L4. */
    bit<16> l4_bytes;

    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (4w4, 4w5): parse_ipv4_payload;
            (4w4, 4w0 &&& 4w0xc): accept;  /* ihl 0..3: malformed */
            (4w4, 4w4): accept;            /* ihl 4: malformed */
            (4w4, _): parse_ipv4_options;  /* ihl 6..15 */
            default: accept;               /* not version 4: malformed */
        }
    }

    state parse_ipv4_options {
        pkt.extract(hdr.ipv4_options, ((bit<32>)hdr.ipv4.ihl - 5) << 5);
        transition parse_ipv4_payload;
    }

    state parse_ipv4_payload {
        l4_bytes = hdr.ipv4.total_len - ((bit<16>)hdr.ipv4.ihl << 2);
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (13w0, IP_PROTO_TCP): parse_tcp;
            (13w0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        verify(l4_bytes >= 20, error.PacketTooShort);
        pkt.extract(hdr.tcp);
        verify(hdr.tcp.data_offset >= 5 && ((bit<16>)hdr.tcp.data_offset << 2) <= l4_bytes,
               error.TcpBadOffset);
        meta.tcp_opt_left = ((bit<8>)hdr.tcp.data_offset - 5) << 2;
        transition select(hdr.tcp.flags & TCP_FLAG_SYN, hdr.tcp.data_offset) {
            (TCP_FLAG_SYN, 4w5): accept;            /* no options */
            (TCP_FLAG_SYN, _): parse_tcp_option;
            default: accept;
        }
    }

    /* At the start of an option. */
    state parse_tcp_option {
        transition select(meta.tcp_opt_left) {
            0: accept;
            default: parse_tcp_option_kind;
        }
    }

    state parse_tcp_option_kind {
        pkt.extract(hdr.tcp_opts.next);
        meta.tcp_opt_left = meta.tcp_opt_left - 1;
        transition select(hdr.tcp_opts.last.value) {
            0: parse_tcp_option_rest;   /* end of list: the rest is padding */
            1: parse_tcp_option;        /* no-op */
            default: parse_tcp_option_length;
        }
    }

    state parse_tcp_option_length {
        transition select(meta.tcp_opt_left) {
            0: accept;
            default: parse_tcp_option_length_byte;
        }
    }

    state parse_tcp_option_length_byte {
        bit<8> kind = hdr.tcp_opts.last.value;
        pkt.extract(hdr.tcp_opts.next);
        meta.tcp_opt_left = meta.tcp_opt_left - 1;
        /* a length below 2 wraps to a huge body: the walk stops at tcp_opt_left */
        meta.tcp_opt_body = hdr.tcp_opts.last.value - 2;
        transition select(kind, hdr.tcp_opts.last.value) {
            (FG_TCP_OPTION_WSCALE, 3): parse_tcp_option_wscale;
            default: parse_tcp_option_body;
        }
    }

    state parse_tcp_option_wscale {
        transition select(meta.tcp_opt_left) {
            0: accept;
            default: parse_tcp_option_wscale_byte;
        }
    }

    state parse_tcp_option_wscale_byte {
        pkt.extract(hdr.tcp_opts.next);
        meta.tcp_opt_left = meta.tcp_opt_left - 1;
        meta.tcp_opt_body = 0;
        meta.tcp_wscale = hdr.tcp_opts.last.value;
        meta.tcp_wscale_seen = 1;
        transition parse_tcp_option;
    }

    /* Skip (extract) the remaining bytes of the current option. */
    state parse_tcp_option_body {
        transition select(meta.tcp_opt_body, meta.tcp_opt_left) {
            (_, 0): accept;
            (0, _): parse_tcp_option;
            default: parse_tcp_option_body_byte;
        }
    }

    state parse_tcp_option_body_byte {
        pkt.extract(hdr.tcp_opts.next);
        meta.tcp_opt_left = meta.tcp_opt_left - 1;
        meta.tcp_opt_body = meta.tcp_opt_body - 1;
        transition parse_tcp_option_body;
    }

    /* After end-of-list: padding up to the data offset. */
    state parse_tcp_option_rest {
        transition select(meta.tcp_opt_left) {
            0: accept;
            default: parse_tcp_option_rest_byte;
        }
    }

    state parse_tcp_option_rest_byte {
        pkt.extract(hdr.tcp_opts.next);
        meta.tcp_opt_left = meta.tcp_opt_left - 1;
        transition parse_tcp_option_rest;
    }

    state parse_udp {
        verify(l4_bytes >= 8, error.PacketTooShort);
        pkt.extract(hdr.udp);
        verify(hdr.udp.length == l4_bytes, error.UdpBadLength);
        transition select(hdr.udp.dst_port, hdr.udp.src_port) {
            (FG_UDP_PORT, _): parse_fg;
            (_, FG_UDP_PORT): parse_fg;
            default: accept;
        }
    }

    state parse_fg {
        verify(hdr.udp.length >= 8 + FG_HEADER_BYTES, error.PacketTooShort);
        pkt.extract(hdr.fg);
        transition select(hdr.fg.kind) {
            FG_KIND_RD_FORWARD: parse_fg_rd;
            FG_KIND_RD_BACKWARD: parse_fg_rd;
            default: accept;
        }
    }

    state parse_fg_rd {
        verify(hdr.udp.length >= 8 + FG_HEADER_BYTES + FG_RD_HEADER_BYTES, error.PacketTooShort);
        pkt.extract(hdr.fg_rd);
        transition accept;
    }
}

control FgVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.total_len, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control FgComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.total_len, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        /* The UDP checksum of a rewritten rate header is updated
         * incrementally in egress (RateHeaderChecksum, rate_feedback.p4):
         * no recomputation over the payload, which on BMv2 would run to the
         * end of the frame instead of the UDP length. */
    }
}

control FgDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.tcp_opts);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.fg);
        pkt.emit(hdr.fg_rd);
    }
}

#endif
