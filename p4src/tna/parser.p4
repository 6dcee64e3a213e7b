/* TNA parsers and deparsers. Same parse graph as ../include/parser.p4 with
 * three differences that Tofino forces (docs/hardware.md, "Parser"):
 *  - IPv4 options are not extracted (TNA has no varbit extract of a
 *    header-length-dependent size): ihl > 5 stops the parser, the options and
 *    everything after stay payload; the packet is routed and counted
 *    (FG_ANOMALY_IPV4_OPTIONS) but not classified further;
 *  - TCP options are never extracted (bytes the parser skipped are cut from
 *    the packet on Tofino, so a skipped option would be lost); the window
 *    scale of a SYN is read with lookahead from the option layouts of Linux
 *    (with and without timestamps or SACK) and Windows;
 *  - checksums are incremental: the parsers compute residuals (the checksum
 *    minus the fields a control may change) and the deparsers add the new
 *    field values back (RFC 1624), so no payload is ever read. */
#ifndef FG_TNA_PARSER_P4
#define FG_TNA_PARSER_P4

#include "types.p4"

parser FgTnaIngressParser(packet_in pkt,
                          out tna_headers_t hdr,
                          out tna_ingress_meta_t meta,
                          out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_verify;
    Checksum() ipv4_resid;
    Checksum() udp_resid;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        meta.anomaly = FG_ANOMALY_NONE;
        meta.sanity_anomaly = FG_ANOMALY_NONE;
        meta.l4_anomaly = FG_ANOMALY_NONE;
        meta.syn_anomaly = FG_ANOMALY_NONE;
        meta.fg_anomaly = FG_ANOMALY_NONE;
        meta.sanity_drop = 0;
        meta.no_route = 0;
        meta.syn_drop = 0;
        meta.meter_drop = 0;
        meta.checksum_error = false;
        meta.ipv4_options = 0;
        meta.fg_rewritten = 0;
        meta.udp_csum_update = 0;
        meta.ipv4_residual = 0;
        meta.udp_residual = 0;
        meta.fc_prev_mac = 0;
        meta.ipv4_ttl_in = 0;
        meta.syn_color = 0;
        meta.tcp_wscale = 0;
        meta.tcp_wscale_seen = 0;
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_verify.add(hdr.ipv4);
        /* Residual for packets with options (the deparser recomputes the
         * others from their fields): used only when nothing follows. */
        ipv4_resid.subtract({hdr.ipv4.hdr_checksum, hdr.ipv4.ttl, hdr.ipv4.protocol});
        ipv4_resid.subtract_all_and_deposit(meta.ipv4_residual);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (4w4, 4w5): parse_ipv4_no_options;
            (4w4, 4w0 &&& 4w0xc): accept;  /* ihl 0..3: malformed */
            (4w4, 4w4): accept;            /* ihl 4: malformed */
            (4w4, _): parse_ipv4_options;  /* ihl 6..15 */
            default: accept;               /* not version 4: malformed */
        }
    }

    state parse_ipv4_no_options {
        meta.checksum_error = ipv4_verify.verify();
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (13w0, IP_PROTO_TCP): parse_tcp;
            (13w0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    /* The options stay payload; the residual (checksum minus ttl and
     * protocol) lets the deparser fix the checksum after the TTL decrement. */
    state parse_ipv4_options {
        meta.ipv4_options = 1;
        transition accept;
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        transition select(hdr.tcp.flags, hdr.tcp.data_offset) {
            (TCP_FLAG_SYN &&& TCP_FLAG_SYN, 4w7): parse_syn_options_short;
            (TCP_FLAG_SYN &&& TCP_FLAG_SYN, 4w8): parse_syn_options;
            (TCP_FLAG_SYN &&& TCP_FLAG_SYN, 4w9): parse_syn_options;
            (TCP_FLAG_SYN &&& TCP_FLAG_SYN, 4w10 &&& 4w0xe): parse_syn_options_long;  /* 10, 11 */
            (TCP_FLAG_SYN &&& TCP_FLAG_SYN, 4w12 &&& 4w0xc): parse_syn_options_long;  /* 12..15 */
            default: accept;
        }
    }

    /* Each state below matches at most 32 bits (Tofino has one 16-bit and
     * two 8-bit parser match registers). */

    /* 28 option bytes or more: the Linux layouts with timestamps
     * (MSS, SACK-permitted or NOP NOP, timestamps, NOP, WS): WS at 16..19. */
    state parse_syn_options_long {
        transition select(pkt.lookahead<bit<160>>()[159:144], pkt.lookahead<bit<160>>()[127:120],
                          pkt.lookahead<bit<160>>()[119:112]) {
            (16w0x0204, 8w0x04, 8w0x02): parse_ts_layout;
            (16w0x0204, 8w0x01, 8w0x01): parse_ts_layout;
            default: parse_syn_options;
        }
    }

    state parse_ts_layout {
        transition select(pkt.lookahead<bit<160>>()[111:96], pkt.lookahead<bit<160>>()[31:24],
                          pkt.lookahead<bit<160>>()[23:16]) {
            (16w0x080a, 8w0x01, 8w0x03): parse_ws_at_16;
            default: accept;
        }
    }

    state parse_ws_at_16 {
        transition select(pkt.lookahead<bit<160>>()[15:8]) {
            8w0x03: take_ws_at_16;
            default: accept;
        }
    }

    state take_ws_at_16 {
        meta.tcp_wscale = pkt.lookahead<bit<160>>()[7:0];
        meta.tcp_wscale_seen = 1;
        transition accept;
    }

    /* 12 option bytes or more: Linux without timestamps (MSS, NOP NOP
     * SACK-permitted, NOP, WS): WS at 8..11. */
    state parse_syn_options {
        transition select(pkt.lookahead<bit<96>>()[95:80], pkt.lookahead<bit<96>>()[63:56],
                          pkt.lookahead<bit<96>>()[55:48]) {
            (16w0x0204, 8w0x01, 8w0x01): parse_sack_layout;
            default: parse_syn_options_short;
        }
    }

    state parse_sack_layout {
        transition select(pkt.lookahead<bit<96>>()[47:32], pkt.lookahead<bit<96>>()[31:24],
                          pkt.lookahead<bit<96>>()[23:16]) {
            (16w0x0402, 8w0x01, 8w0x03): parse_ws_at_8;
            default: accept;
        }
    }

    state parse_ws_at_8 {
        transition select(pkt.lookahead<bit<96>>()[15:8]) {
            8w0x03: take_ws_at_8;
            default: accept;
        }
    }

    state take_ws_at_8 {
        meta.tcp_wscale = pkt.lookahead<bit<96>>()[7:0];
        meta.tcp_wscale_seen = 1;
        transition accept;
    }

    /* 8 option bytes or more: MSS, NOP, WS (Windows): WS at 4..7. */
    state parse_syn_options_short {
        transition select(pkt.lookahead<bit<64>>()[63:48], pkt.lookahead<bit<64>>()[31:24],
                          pkt.lookahead<bit<64>>()[23:16]) {
            (16w0x0204, 8w0x01, 8w0x03): parse_ws_at_4;
            default: accept;
        }
    }

    state parse_ws_at_4 {
        transition select(pkt.lookahead<bit<64>>()[15:8]) {
            8w0x03: take_ws_at_4;
            default: accept;
        }
    }

    state take_ws_at_4 {
        meta.tcp_wscale = pkt.lookahead<bit<64>>()[7:0];
        meta.tcp_wscale_seen = 1;
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        /* UDP residual: the checksum minus itself and minus every header
         * extracted after this point (fg, fg_rd, fg_xcp); the deparser adds them back. */
        udp_resid.subtract({hdr.udp.checksum});
        udp_resid.subtract_all_and_deposit(meta.udp_residual);
        transition select(hdr.udp.dst_port, hdr.udp.src_port) {
            (FG_UDP_PORT, _): parse_fg;
            (_, FG_UDP_PORT): parse_fg;
            default: accept;
        }
    }

    state parse_fg {
        pkt.extract(hdr.fg);
        transition select(hdr.fg.kind) {
            FG_KIND_RD_FORWARD: parse_fg_rd;
            FG_KIND_RD_BACKWARD: parse_fg_rd;
            FG_KIND_XCP_DATA: parse_fg_xcp;
            FG_KIND_XCP_ACK: parse_fg_xcp;
            default: accept;
        }
    }

    /* (a datagram too short for it is caught by L4Classify's xcp_room) */
    state parse_fg_xcp {
        pkt.extract(hdr.fg_xcp);
        transition accept;
    }

    state parse_fg_rd {
        pkt.extract(hdr.fg_rd);
        transition accept;
    }
}

control FgTnaIngressDeparser(packet_out pkt,
                             inout tna_headers_t hdr,
                             in tna_ingress_meta_t meta,
                             in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    Checksum() ipv4_opt_csum;
    Checksum() udp_csum;

    apply {
        /* Routing decrements the TTL; an RD turnaround swaps addresses (the
         * sum is unchanged) and ports and changes the kind. */
        if (meta.ipv4_options == 1) {
            hdr.ipv4.hdr_checksum = ipv4_opt_csum.update({hdr.ipv4.ttl, hdr.ipv4.protocol,
                                                          meta.ipv4_residual});
        } else {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        if (meta.udp_csum_update == 1) {
            hdr.udp.checksum = udp_csum.update({hdr.fg, hdr.fg_rd, hdr.fg_xcp, meta.udp_residual});
        }
        pkt.emit(meta.bridge);
        pkt.emit(hdr);
    }
}

parser FgTnaEgressParser(packet_in pkt,
                         out tna_headers_t hdr,
                         out tna_egress_meta_t meta,
                         out egress_intrinsic_metadata_t eg_intr_md) {
    Checksum() udp_resid;
    Checksum() tcp_resid;

    state start {
        pkt.extract(eg_intr_md);
        meta.is_rd_clone = 0;
        meta.fg_rewritten = 0;
        meta.udp_csum_update = 0;
        meta.tcp_csum_update = 0;
        meta.ipv4_csum_update = 0;
        meta.udp_has_csum = 0;
        meta.dropped = 0;
        meta.udp_residual = 0;
        meta.tcp_residual = 0;
        meta.fair_rate_kbps = 0;
        meta.port_congested = 0;
        meta.fb_hit = 0;
        meta.port_congested_flag = 0;
        meta.fb_data = 0;
        meta.er_lower = 0;
        meta.er_rate = 0;
        meta.queue_bucket = 0;
        meta.rtt_bucket = 0;
        meta.mirror_session = 0;
        meta.fc_dpf = 0;
        meta.fc_above_q0 = 0;
        meta.fc_queue_depth = 0;
        meta.fc.win_now = 0;
        meta.fc.pkt_bytes = 0;
        meta.fc.apr = 0;
        meta.fc.interval_m1 = 0;
        meta.fc.rtt_new = 0;
        meta.fc.shift_in = 0;
        meta.fc.now_us = 0;
        meta.fc.stamp_us = 0;
        meta.fc.syn_us = 0;
        meta.fc.rd_minus = 0;
        meta.fc.closed_bytes = 0;
        meta.fc.new_window = 0;
        meta.fc.shift = 0;
        meta.fc.log_in_rtt = 0;
        meta.fc.sample = 0;
        meta.fc.sample_delta = 0;
        meta.xcp_bucket = 0;
        meta.xcp_xi_p = FG_XCP_LG_NONE;
        meta.xcp_xi_n = FG_XCP_LG_NONE;
        meta.xcp_factors_hit = 0;
        transition select(pkt.lookahead<bit<8>>()) {
            FG_TNA_MIRRORED: parse_rd_mirror;
            default: parse_bridge;
        }
    }

    state parse_bridge {
        pkt.extract(meta.bridge);
        transition parse_ethernet;
    }

    /* An RD clone: the mirror session truncates it to Ethernet + IPv4
     * (docs/hardware.md), egress rebuilds UDP, fg_rate_t and fg_rd_t. */
    state parse_rd_mirror {
        pkt.extract(meta.rd_mirror);
        meta.is_rd_clone = 1;
        meta.bridge.setInvalid();
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        transition accept;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (4w5, 13w0, IP_PROTO_TCP): parse_tcp;
            (4w5, 13w0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        tcp_resid.subtract({hdr.tcp.checksum, hdr.tcp.window});
        tcp_resid.subtract_all_and_deposit(meta.tcp_residual);
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        /* UDP residual: the checksum minus itself and minus every header
         * extracted after this point (fg, fg_rd, fg_xcp); the deparser adds them back. */
        udp_resid.subtract({hdr.udp.checksum});
        udp_resid.subtract_all_and_deposit(meta.udp_residual);
        transition select(hdr.udp.dst_port, hdr.udp.src_port) {
            (FG_UDP_PORT, _): parse_fg;
            (_, FG_UDP_PORT): parse_fg;
            default: accept;
        }
    }

    state parse_fg {
        pkt.extract(hdr.fg);
        transition select(hdr.fg.kind) {
            FG_KIND_RD_FORWARD: parse_fg_rd;
            FG_KIND_RD_BACKWARD: parse_fg_rd;
            FG_KIND_XCP_DATA: parse_fg_xcp;
            FG_KIND_XCP_ACK: parse_fg_xcp;
            default: accept;
        }
    }

    /* (a datagram too short for it is caught by L4Classify's xcp_room) */
    state parse_fg_xcp {
        pkt.extract(hdr.fg_xcp);
        transition accept;
    }

    state parse_fg_rd {
        pkt.extract(hdr.fg_rd);
        transition accept;
    }
}

control FgTnaEgressDeparser(packet_out pkt,
                            inout tna_headers_t hdr,
                            in tna_egress_meta_t meta,
                            in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;
    Checksum() udp_csum;
    Checksum() tcp_csum;
    Mirror() mirror;

    apply {
        if (eg_dprsr_md.mirror_type == FG_TNA_MIRROR_RD) {
            mirror.emit<fg_rd_mirror_t>(meta.mirror_session, meta.rd_mirror);
        }
        /* An RD built from a clone: a new IPv4 header. */
        if (meta.ipv4_csum_update == 1) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        if (meta.udp_csum_update == 1) {
            hdr.udp.checksum = udp_csum.update({hdr.fg, hdr.fg_rd, hdr.fg_xcp, meta.udp_residual});
        }
        if (meta.tcp_csum_update == 1) {
            hdr.tcp.checksum = tcp_csum.update({hdr.tcp.window, meta.tcp_residual});
        }
        pkt.emit(hdr);
    }
}

#endif
