/* TNA ingress features. Each control is the counterpart of the v1model
 * control of the same name in ../include/ (sanity.p4, routing.p4,
 * classify.p4, admission.p4, telemetry.p4, ficcrd.p4); control-plane names
 * (@name) are the same. standard_metadata.egress_spec is
 * ig_tm_md.ucast_egress_port, mark_to_drop is ig_dprsr_md.drop_ctl = 1. */
#ifndef FG_TNA_INGRESS_P4
#define FG_TNA_INGRESS_P4

#include "types.p4"

control InputSanity(inout tna_headers_t hdr,
                    inout tna_ingress_meta_t meta,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    bit<16> min_len;
    bit<16> short_by;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) ihl_bytes;

    @hidden
    action reject(bit<8> reason) {
        ig_dprsr_md.drop_ctl = 1;
        meta.sanity_drop = 1;
        meta.sanity_anomaly = reason;
    }

    /* ihl x 4 through the hash unit: an ALU op on ihl alone would split the
     * version/ihl byte, which the deparser must emit whole. */
    @hidden
    action header_bytes() {
        min_len = ihl_bytes.get({10w0, hdr.ipv4.ihl, 2w0});
    }
    /* total_len < ihl * 4 without comparing two fields (a gateway can
     * only compare a field with a constant): saturating subtract. */
    @hidden
    action measure_length() {
        short_by = min_len |-| hdr.ipv4.total_len;
    }

    @hidden
    action note_options() {
        meta.sanity_anomaly = FG_ANOMALY_IPV4_OPTIONS;
    }

    @hidden
    action pass() {
    }

    /* v1model's if-chain (sanity.p4) as one TCAM lookup: the first entry that
     * matches wins, in the chain's order. One logical table instead of a
     * gateway and a table per branch (docs/hardware.md, "Fitting FICCRD"). */
    @hidden
    table sanity_checks {
        key = {
            hdr.ipv4.isValid()      : ternary;
            hdr.ethernet.isValid()  : ternary;
            hdr.ethernet.ether_type : ternary;
            hdr.ipv4.version        : ternary;
            hdr.ipv4.ihl            : ternary;
            short_by                : ternary;
            meta.checksum_error     : ternary;
            meta.ipv4_ttl_in        : ternary;  /* hdr.ipv4.ttl before routing */
            meta.ipv4_options       : ternary;
        }
        actions = {
            reject;
            note_options;
            pass;
        }
        const default_action = pass();
        size = 16;
        const entries = {
            (false, true, ETHERTYPE_IPV4, _, _, _, _, _, _) : reject(FG_ANOMALY_IPV4_MALFORMED);
            (false, _, _, _, _, _, _, _, _) : reject(FG_ANOMALY_NOT_IPV4);
            (true, _, _, 4, 4w0 &&& 4w0xc, _, _, _, _) : reject(FG_ANOMALY_IPV4_MALFORMED);
            (true, _, _, 4, 4, _, _, _, _) : reject(FG_ANOMALY_IPV4_MALFORMED);
            (true, _, _, 4, _, 0, true, _, _) : reject(FG_ANOMALY_IPV4_BAD_CHECKSUM);
            (true, _, _, 4, _, 0, false, 0, _) : reject(FG_ANOMALY_TTL_EXPIRED);
            (true, _, _, 4, _, 0, false, 1, _) : reject(FG_ANOMALY_TTL_EXPIRED);
            (true, _, _, 4, _, 0, false, _, 1) : note_options();
            (true, _, _, 4, _, 0, false, _, 0) : pass();
            /* version != 4, or total_len < ihl x 4 (short_by != 0) */
            (true, _, _, _, _, _, _, _, _) : reject(FG_ANOMALY_IPV4_MALFORMED);
        }
    }

    apply {
        header_bytes();
        measure_length();
        sanity_checks.apply();
    }
}

control AnomalyCount(in tna_ingress_meta_t meta) {
    @name(".input_anomalies")
    Counter<bit<32>, bit<5>>(FG_ANOMALY_ENTRIES, CounterType_t.PACKETS) input_anomalies;

    apply {
        if (meta.anomaly != FG_ANOMALY_NONE) {
            input_anomalies.count(meta.anomaly[4:0]);
        }
    }
}

control Ipv4Routing(inout tna_headers_t hdr,
                    inout tna_ingress_meta_t meta,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    @name(".forward")
    action forward(port_id_t port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    @name(".drop_no_route")
    action drop_no_route() {
        ig_dprsr_md.drop_ctl = 1;
        meta.no_route = 1;
    }

    @name(".ipv4_routes")
    table ipv4_routes {
        key = {
            hdr.ipv4.dst_addr : lpm @name("dst_addr");
        }
        actions = {
            forward;
            drop_no_route;
        }
        default_action = drop_no_route();
        size = 1024;
    }

    apply {
        ipv4_routes.apply();
    }
}

control L4Classify(inout tna_headers_t hdr,
                   inout tna_ingress_meta_t meta,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    /* Three independent verdicts (L4, TCP flags, rate header) that the
     * ingress combines with v1model's precedence (fairgate_tna.p4): one
     * variable each, so that the checks run side by side in the same stage.
     * Each is v1model's if-chain (classify.p4) as one TCAM lookup whose
     * entries are in the chain's order (the first that matches wins). */
    @hidden
    action note_l4(bit<8> reason) {
        meta.l4_anomaly = reason;
    }

    @hidden
    action reject(bit<8> reason) {
        ig_dprsr_md.drop_ctl = 1;
        meta.syn_drop = 1;
        meta.syn_anomaly = reason;
    }

    /* The rate header's anomaly (or none) and whether a switch may stamp it. */
    @hidden
    action judge_fg(bit<8> reason, bit<1> stampable) {
        meta.fg_anomaly = reason;
        meta.bridge.fg_stampable = stampable;
    }

    @hidden
    action pass() {
    }

    /* Room in the UDP datagram beyond a rate header, beyond an RD and beyond
     * an XCP header: 0 when it is too short for it (length < 36, < 44, < 48). */
    bit<16> fg_room;
    bit<16> rd_room;
    bit<16> xcp_room;

    @hidden
    action measure_udp() {
        fg_room = hdr.udp.length |-| (8 + FG_HEADER_BYTES - 1);
        rd_room = hdr.udp.length |-| (8 + FG_HEADER_BYTES + FG_RD_HEADER_BYTES - 1);
        xcp_room = hdr.udp.length |-| (8 + FG_HEADER_BYTES + FG_XCP_HEADER_BYTES - 1);
    }

    /* fragment = frag_offset != 0 or MF; L4 is not parsed behind IPv4
     * options on TNA (parser.p4), so those are not truncated. */
    @hidden
    table l4_checks {
        key = {
            hdr.ipv4.isValid()  : ternary;
            hdr.ipv4.flags      : ternary;
            hdr.ipv4.frag_offset : ternary;
            meta.ipv4_options   : ternary;
            hdr.ipv4.protocol   : ternary;
            hdr.tcp.isValid()   : ternary;
            hdr.udp.isValid()   : ternary;
        }
        actions = {
            note_l4;
            pass;
        }
        const default_action = pass();
        size = 8;
        const entries = {
            (true, 3w1 &&& 3w1, _, _, _, _, _) : note_l4(FG_ANOMALY_IPV4_FRAGMENT);
            (true, _, 0, 1, _, _, _) : pass();
            (true, _, 0, 0, IP_PROTO_TCP, false, _) : note_l4(FG_ANOMALY_L4_TRUNCATED);
            (true, _, 0, 0, IP_PROTO_UDP, _, false) : note_l4(FG_ANOMALY_L4_TRUNCATED);
            (true, _, 0, _, _, _, _) : pass();
            (true, _, _, _, _, _, _) : note_l4(FG_ANOMALY_IPV4_FRAGMENT);
        }
    }

    @hidden
    table syn_checks {
        key = {
            hdr.tcp.isValid() : ternary;
            hdr.tcp.flags     : ternary;
        }
        actions = {
            reject;
            pass;
        }
        const default_action = pass();
        size = 4;
        const entries = {
            (true, (TCP_FLAG_SYN | TCP_FLAG_FIN) &&& (TCP_FLAG_SYN | TCP_FLAG_FIN))
                : reject(FG_ANOMALY_TCP_SYN_FIN);
            (true, (TCP_FLAG_SYN | TCP_FLAG_RST) &&& (TCP_FLAG_SYN | TCP_FLAG_RST))
                : reject(FG_ANOMALY_TCP_SYN_RST);
        }
    }

    /* A rate-header datagram (either UDP port FG_UDP_PORT, not a fragment):
     * its checks for one port pattern, in v1model's order. */
#define FG_TNA_FG_CHECKS(DST, SRC) \
    (true, DST, SRC, 0, 3w0 &&& 3w1, false, _, _, _, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_FG_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, 0, _, _, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_FG_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_DATA, 0, _, _, _, _) \
        : judge_fg(FG_ANOMALY_FG_RATE_ZERO, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_DATA, FG_RATE_UNLIMITED, _, _, _, _) \
        : judge_fg(FG_ANOMALY_FG_RATE_UNLIMITED, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_DATA, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_NONE, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_RD_FORWARD, _, false, _, _, _) \
        : judge_fg(FG_ANOMALY_FG_RD_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_RD_FORWARD, _, _, 0, _, _) \
        : judge_fg(FG_ANOMALY_FG_RD_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_RD_FORWARD, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_NONE, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_RD_BACKWARD, _, false, _, _, _) \
        : judge_fg(FG_ANOMALY_FG_RD_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_RD_BACKWARD, _, _, 0, _, _) \
        : judge_fg(FG_ANOMALY_FG_RD_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_RD_BACKWARD, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_NONE, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_XCP_DATA, _, _, _, false, _) \
        : judge_fg(FG_ANOMALY_FG_XCP_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_XCP_DATA, _, _, _, _, 0) \
        : judge_fg(FG_ANOMALY_FG_XCP_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_XCP_DATA, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_NONE, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_XCP_ACK, _, _, _, false, _) \
        : judge_fg(FG_ANOMALY_FG_XCP_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_XCP_ACK, _, _, _, _, 0) \
        : judge_fg(FG_ANOMALY_FG_XCP_TRUNCATED, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_XCP_ACK, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_NONE, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_ACK, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_NONE, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_PROBE, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_NONE, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, FG_KIND_PROBE_ACK, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_NONE, 1); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, FG_VERSION, _, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_FG_BAD_KIND, 0); \
    (true, DST, SRC, 0, 3w0 &&& 3w1, true, _, _, _, _, _, _, _, _) \
        : judge_fg(FG_ANOMALY_FG_BAD_VERSION, 0);

    @hidden
    table fg_checks {
        key = {
            hdr.udp.isValid()    : ternary;
            hdr.udp.dst_port     : ternary;
            hdr.udp.src_port     : ternary;
            hdr.ipv4.frag_offset : ternary;
            hdr.ipv4.flags       : ternary;
            hdr.fg.isValid()     : ternary;
            fg_room              : ternary;
            hdr.fg.version       : ternary;
            hdr.fg.kind          : ternary;
            hdr.fg.rate_kbps     : ternary;
            hdr.fg_rd.isValid()  : ternary;
            rd_room              : ternary;
            hdr.fg_xcp.isValid() : ternary;
            xcp_room             : ternary;
        }
        actions = {
            judge_fg;
        }
        const default_action = judge_fg(FG_ANOMALY_NONE, 0);
        size = 64;
        const entries = {
            FG_TNA_FG_CHECKS(FG_UDP_PORT, _)
            FG_TNA_FG_CHECKS(_, FG_UDP_PORT)
        }
    }
#undef FG_TNA_FG_CHECKS

    apply {
        measure_udp();
        l4_checks.apply();
        syn_checks.apply();
        fg_checks.apply();
    }
}

#ifndef FG_TNA_NO_ADMISSION
control SynAdmission(inout tna_headers_t hdr,
                     inout tna_ingress_meta_t meta,
                     inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                     in ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    @name(".syn_meter")
    Meter<bit<4>>(FG_MAX_PORTS, MeterType_t.PACKETS) syn_meter;

    @name(".session_events")
    Counter<bit<32>, bit<7>>(FG_SESSION_ENTRIES, CounterType_t.PACKETS) session_events;

    /* The FIN filter (v1model: include/admission.p4): per slot the last FIN's
     * sequence number; one stateful-ALU access answers with the FIN's event itself,
     * so no stage is spent choosing it after the register. */
    @name(".fin_filter")
    Register<bit<32>, bit<16>>(FG_FIN_FILTER_SLOTS, 0) fin_filter;
    Hash<bit<16>>(HashAlgorithm_t.CRC32) fin_slot;
    RegisterAction<bit<32>, bit<16>, bit<3>>(fin_filter) filter_fin = {
        void apply(inout bit<32> value, out bit<3> fin_event) {
            if (value == hdr.tcp.seq_no) {
                fin_event = FG_EVENT_FIN_REPEAT;
            } else {
                fin_event = FG_EVENT_FIN;
            }
            value = hdr.tcp.seq_no;
        }
    };

    @name(".gate_syns")
    action gate_syns() {
        meta.syn_color = syn_meter.execute(ig_tm_md.ucast_egress_port[3:0]);
    }

    @name(".admission_ports")
    table admission_ports {
        key = {
            ig_tm_md.ucast_egress_port : exact @name("egress_port");
        }
        actions = {
            gate_syns;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    apply {
        bit<8> control_flags = hdr.tcp.flags
            & (TCP_FLAG_SYN | TCP_FLAG_ACK | TCP_FLAG_RST | TCP_FLAG_FIN);
        bit<3> event = FG_EVENT_SYN_UNGATED;
        bool counted = true;
        meta.syn_color = FG_METER_GREEN;
        if (control_flags == TCP_FLAG_SYN) {
            if (admission_ports.apply().hit) {
                /* TNA's red is MeterColor_t.RED (3), v1model's FG_METER_RED (2). */
                if (meta.syn_color == (bit<8>)MeterColor_t.RED) {
                    ig_dprsr_md.drop_ctl = 1;
                    meta.meter_drop = 1;
                    event = FG_EVENT_SYN_DROPPED;
                } else {
                    event = FG_EVENT_SYN_ADMITTED;
                }
            }
        } else if (control_flags == (TCP_FLAG_SYN | TCP_FLAG_ACK)) {
            event = FG_EVENT_SYNACK;
        } else if ((control_flags & TCP_FLAG_RST) != 0) {
            event = FG_EVENT_RST;
        } else if ((control_flags & TCP_FLAG_FIN) != 0) {
            bit<16> slot = fin_slot.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                         hdr.tcp.src_port, hdr.tcp.dst_port});
            event = filter_fin.execute(slot);
        } else {
            counted = false;
        }
        if (counted) {
            session_events.count(ig_tm_md.ucast_egress_port[3:0] ++ event);
        }
    }
}
#endif

#ifndef FG_TNA_NO_TELEMETRY
control ArrivalTelemetry(in ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    @name(".port_arrivals")
    Counter<bit<64>, bit<4>>(FG_MAX_PORTS, CounterType_t.PACKETS_AND_BYTES) port_arrivals;

    apply {
        port_arrivals.count(ig_tm_md.ucast_egress_port[3:0]);
    }
}
#endif

#ifndef FG_TNA_NO_FICCRD
control FiccrdIngress(inout tna_headers_t hdr,
                      inout tna_ingress_meta_t meta,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    @name(".set_source_port")
    action set_source_port(bit<16> rd_interval) {
        meta.bridge.fc_source = 1;
        meta.bridge.fc_rd_interval = rd_interval;
    }

    @name(".ficcrd_sources")
    table ficcrd_sources {
        key = {
            ig_intr_md.ingress_port : exact @name("ingress_port");
        }
        actions = {
            set_source_port;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    @name(".set_edge_port")
    action set_edge_port(bit<32> rtt_min_us) {
        meta.bridge.fc_edge = 1;
        meta.bridge.fc_rtt_min_us = rtt_min_us;
        meta.bridge.fc_edge_port = ig_tm_md.ucast_egress_port;
    }

    @name(".ficcrd_edges")
    table ficcrd_edges {
        key = {
            ig_tm_md.ucast_egress_port : exact @name("egress_port");
        }
        actions = {
            set_edge_port;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    @name(".turn_rd")
    action turn_rd() {
        meta.bridge.fc_turned = 1;
        meta.bridge.fc_queue_port = ig_tm_md.ucast_egress_port;
        meta.bridge.fc_queue_here = 0;
        hdr.fg.kind = FG_KIND_RD_BACKWARD;
        ipv4_addr_t src = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = src;
        bit<16> sport = hdr.udp.src_port;
        hdr.udp.src_port = hdr.udp.dst_port;
        hdr.udp.dst_port = sport;
        hdr.ethernet.dst_addr = meta.fc_prev_mac;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
        meta.fg_rewritten = 1;
    }

    @hidden
    action forward_rd() {
        meta.bridge.fc_queue_port = ig_tm_md.ucast_egress_port;
        meta.bridge.fc_queue_here = 1;
    }

    @hidden
    action backward_rd() {
        meta.bridge.fc_queue_port = ig_intr_md.ingress_port;
        meta.bridge.fc_queue_here = 0;
        meta.bridge.fc_consume = meta.bridge.fc_edge;
        meta.bridge.fc_fkey = hdr.fg_rd.flow_key;
    }

    /* The flow key of a TCP segment for the egress edge (v1model: computed
     * in FiccrdEgress): from the sender's side at a source port, from the
     * receiver's otherwise. Here, so that egress indexes the flow registers
     * without a hash step of its own, and because one egress table could
     * not hold both hashes (bf-p4c: 64 bits through a 32-bit immediate
     * path). */
    Hash<bit<32>>(HashAlgorithm_t.CRC32) hash_out;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) hash_back;
    @hidden
    action take_out_key() {
        meta.bridge.fc_fkey = hash_out.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                                            hdr.tcp.src_port, hdr.tcp.dst_port});
    }
    @hidden
    action take_back_key() {
        meta.bridge.fc_fkey = hash_back.get({hdr.ipv4.dst_addr, hdr.ipv4.src_addr, hdr.ipv4.protocol,
                                             hdr.tcp.dst_port, hdr.tcp.src_port});
    }

    apply {
        bit<1> fragment = 0;
        if (hdr.ipv4.frag_offset != 0 || (hdr.ipv4.flags & 3w1) != 0) {
            fragment = 1;
        }
        if (meta.bridge.fg_stampable == 1 && hdr.fg_rd.isValid()
            && (hdr.fg.kind == FG_KIND_RD_FORWARD || hdr.fg.kind == FG_KIND_RD_BACKWARD)) {
            meta.bridge.fc_rd_valid = 1;
        }
        if (hdr.tcp.isValid() && fragment == 0) {
            ficcrd_sources.apply();
        }
        if ((hdr.tcp.isValid() && fragment == 0) || meta.bridge.fc_rd_valid == 1) {
            ficcrd_edges.apply();
        }
        if (hdr.tcp.isValid()) {
            if (meta.bridge.fc_source == 1) {
                take_out_key();
            } else {
                take_back_key();
            }
        }
        if (meta.bridge.fc_rd_valid == 1) {
            if (hdr.fg.kind == FG_KIND_RD_FORWARD) {
                if (meta.bridge.fc_edge == 1 && ig_intr_md.ingress_port < FG_MAX_PORTS) {
                    turn_rd();
                } else {
                    forward_rd();
                }
            } else {
                backward_rd();
            }
        }
        if (meta.fg_rewritten == 1 && hdr.udp.checksum != 0) {
            meta.udp_csum_update = 1;
        }
    }
}
#endif

#endif
