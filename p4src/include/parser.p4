/* Parser, checksum controls and deparser shared by every FairGate program.
 *
 * Parsing rules (the ingress acts on what the parser leaves valid):
 *  - non-IPv4 frames: only ethernet is valid (ingress drops them);
 *  - IPv4 with version != 4 or ihl < 5: ipv4 valid, nothing after it (dropped);
 *  - IPv4 options (ihl 6..15) are extracted as one varbit and re-emitted as is;
 *  - non-first fragments (frag_offset != 0) get no L4 parsing;
 *  - nothing is parsed past the IPv4 total length: a TCP or UDP header that
 *    does not fit in the IPv4 payload is not extracted, so bytes after the
 *    total length (Ethernet padding, junk) are never read as a header and
 *    leave the switch as they came;
 *  - TCP: options are parsed only on SYN segments (window scale), one byte
 *    at a time into tcp_opts so that they are re-emitted unchanged; the walk
 *    is bounded by the data offset, and happens only when the data offset is
 *    at least 5 and ends inside the IPv4 payload (otherwise ingress drops the
 *    segment, classify.p4), so a bogus option length runs past neither;
 *  - UDP: the rate header (to or from FG_UDP_PORT) is extracted only when the
 *    UDP length is the IPv4 payload length and holds the header; RD kinds
 *    carry fg_rd_t after it, and XCP kinds fg_xcp_t, each extracted only when
 *    the UDP length holds it too.
 *    Otherwise the bytes stay payload.
 * The parser only decides what to extract; ingress works out the reason from
 * the header fields (sanity.p4, classify.p4), including the frame length
 * (IPv4 total length vs standard_metadata.packet_length). No check here makes
 * a BMv2 temporary field (they cost per packet, docs/ficcrd.md "Cost on
 * BMv2"): lengths are compared by select keysets on plain fields.
 */
#ifndef FG_PARSER_P4
#define FG_PARSER_P4

#include "headers.p4"

parser FgParser(packet_in pkt,
                out headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    /* IPv4 payload bytes (total length - header) not parsed yet: the L4 parse
     * stays inside them. A total length below the header wraps this around;
     * sanity drops such packets before anything acts on L4. */
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
        l4_bytes = hdr.ipv4.total_len - ((bit<16>)hdr.ipv4.ihl << 2);
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
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol, l4_bytes) {
            (13w0, IP_PROTO_TCP, 0 .. 19): accept;  /* TCP header cut by the total length */
            (13w0, IP_PROTO_TCP, _): parse_tcp;
            (13w0, IP_PROTO_UDP, 0 .. 7): accept;   /* UDP header cut by the total length */
            (13w0, IP_PROTO_UDP, _): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        meta.tcp_opt_left = ((bit<8>)hdr.tcp.data_offset - 5) << 2;
        /* payload bytes after the TCP header: wraps (top bit set) when the
         * data offset runs past the IPv4 payload (the IPv4 payload is below
         * 2^15 bytes in every frame sanity lets through) */
        l4_bytes = l4_bytes - ((bit<16>)hdr.tcp.data_offset << 2);
        transition select(hdr.tcp.flags & TCP_FLAG_SYN, hdr.tcp.data_offset, l4_bytes) {
            (TCP_FLAG_SYN, 0 .. 4, _): accept;                  /* data offset < 5: dropped */
            (TCP_FLAG_SYN, _, 16w0x8000 &&& 16w0x8000): accept; /* past the payload: dropped */
            (TCP_FLAG_SYN, 5, _): accept;                       /* no options */
            (TCP_FLAG_SYN, _, _): parse_tcp_option;
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
        pkt.extract(hdr.udp);
        l4_bytes = l4_bytes - hdr.udp.length;  /* 0: the UDP length is the IPv4 payload */
        transition select(l4_bytes, hdr.udp.length, hdr.udp.dst_port, hdr.udp.src_port) {
            (0, 0 .. 8 + FG_HEADER_BYTES - 1, _, _): accept;  /* no room for the header */
            (0, _, FG_UDP_PORT, _): parse_fg;
            (0, _, _, FG_UDP_PORT): parse_fg;
            default: accept;
        }
    }

    state parse_fg {
        pkt.extract(hdr.fg);
        transition select(hdr.fg.kind, hdr.udp.length) {
            (FG_KIND_RD_FORWARD, 0 .. 8 + FG_HEADER_BYTES + FG_RD_HEADER_BYTES - 1): accept;
            (FG_KIND_RD_BACKWARD, 0 .. 8 + FG_HEADER_BYTES + FG_RD_HEADER_BYTES - 1): accept;
            (FG_KIND_RD_FORWARD, _): parse_fg_rd;
            (FG_KIND_RD_BACKWARD, _): parse_fg_rd;
            (FG_KIND_XCP_DATA, 0 .. 8 + FG_HEADER_BYTES + FG_XCP_HEADER_BYTES - 1): accept;
            (FG_KIND_XCP_ACK, 0 .. 8 + FG_HEADER_BYTES + FG_XCP_HEADER_BYTES - 1): accept;
            (FG_KIND_XCP_DATA, _): parse_fg_xcp;
            (FG_KIND_XCP_ACK, _): parse_fg_xcp;
            default: accept;
        }
    }

    state parse_fg_xcp {
        pkt.extract(hdr.fg_xcp);
        transition accept;
    }

    state parse_fg_rd {
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
        pkt.emit(hdr.fg_xcp);
    }
}

#endif
