/* TNA ingress features. Each control is the counterpart of the v1model
 * control of the same name in ../include/ (sanity.p4, routing.p4,
 * classify.p4, admission.p4, telemetry.p4, ficcrd.p4); control-plane names
 * (@name) are the same. standard_metadata.egress_spec is
 * ig_tm_md.ucast_egress_port, mark_to_drop is ig_dprsr_md.drop_ctl = 1. */
#ifndef FG_TNA_INGRESS_P4
#define FG_TNA_INGRESS_P4

#include "tna/types.p4"

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

    apply {
        header_bytes();
        measure_length();
        if (!hdr.ipv4.isValid()) {
            if (hdr.ethernet.isValid() && hdr.ethernet.ether_type == ETHERTYPE_IPV4) {
                reject(FG_ANOMALY_IPV4_MALFORMED);
            } else {
                reject(FG_ANOMALY_NOT_IPV4);
            }
        } else if (hdr.ipv4.version != 4 || hdr.ipv4.ihl < 5) {
            reject(FG_ANOMALY_IPV4_MALFORMED);
        } else if (short_by != 0) {
            reject(FG_ANOMALY_IPV4_MALFORMED);
        } else if (meta.checksum_error) {
            reject(FG_ANOMALY_IPV4_BAD_CHECKSUM);
        } else if (hdr.ipv4.ttl <= 1) {
            reject(FG_ANOMALY_TTL_EXPIRED);
        } else if (meta.ipv4_options == 1) {
            meta.sanity_anomaly = FG_ANOMALY_IPV4_OPTIONS;
        }
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
     * variable each, so that the checks run side by side in the same stages. */
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

    @hidden
    action note(bit<8> reason) {
        meta.fg_anomaly = reason;
    }

    /* Room in the UDP datagram beyond a rate header and beyond an RD:
     * 0 when it is too short for it (length < 36, length < 44). */
    bit<16> fg_room;
    bit<16> rd_room;

    @hidden
    action measure_udp() {
        fg_room = hdr.udp.length |-| (8 + FG_HEADER_BYTES - 1);
        rd_room = hdr.udp.length |-| (8 + FG_HEADER_BYTES + FG_RD_HEADER_BYTES - 1);
    }

    apply {
        measure_udp();
        bit<1> fragment = 0;
        if (hdr.ipv4.frag_offset != 0 || (hdr.ipv4.flags & 3w1) != 0) {
            fragment = 1;
        }
        bit<1> fg_port = 0;
        if (hdr.udp.isValid()) {
            if (hdr.udp.dst_port == FG_UDP_PORT || hdr.udp.src_port == FG_UDP_PORT) {
                fg_port = 1;
            }
        }
        if (fragment == 1) {
            note_l4(FG_ANOMALY_IPV4_FRAGMENT);
        } else if (meta.ipv4_options == 1) {
            /* L4 is not parsed behind IPv4 options on TNA (parser.p4). */
        } else if (hdr.ipv4.protocol == IP_PROTO_TCP && !hdr.tcp.isValid()) {
            note_l4(FG_ANOMALY_L4_TRUNCATED);
        } else if (hdr.ipv4.protocol == IP_PROTO_UDP && !hdr.udp.isValid()) {
            note_l4(FG_ANOMALY_L4_TRUNCATED);
        }

        if (hdr.tcp.isValid() && (hdr.tcp.flags & TCP_FLAG_SYN) != 0) {
            if ((hdr.tcp.flags & TCP_FLAG_FIN) != 0) {
                reject(FG_ANOMALY_TCP_SYN_FIN);
            } else if ((hdr.tcp.flags & TCP_FLAG_RST) != 0) {
                reject(FG_ANOMALY_TCP_SYN_RST);
            }
        }

        meta.bridge.fg_stampable = 0;
        if (fg_port == 1 && fragment == 0) {
            if (!hdr.fg.isValid()) {
                note(FG_ANOMALY_FG_TRUNCATED);
            } else if (fg_room == 0) {
                note(FG_ANOMALY_FG_TRUNCATED);
            } else if (hdr.fg.version != FG_VERSION) {
                note(FG_ANOMALY_FG_BAD_VERSION);
            } else if (hdr.fg.kind == 0 || hdr.fg.kind > FG_KIND_MAX) {
                note(FG_ANOMALY_FG_BAD_KIND);
            } else if (hdr.fg.kind == FG_KIND_DATA) {
                /* (a gateway reads at most 4 bytes + 12 bits: one test per field) */
                if (hdr.fg.rate_kbps == 0) {
                    note(FG_ANOMALY_FG_RATE_ZERO);
                } else {
                    meta.bridge.fg_stampable = 1;
                    if (hdr.fg.rate_kbps == FG_RATE_UNLIMITED) {
                        note(FG_ANOMALY_FG_RATE_UNLIMITED);
                    }
                }
            } else if (hdr.fg.kind == FG_KIND_RD_FORWARD || hdr.fg.kind == FG_KIND_RD_BACKWARD) {
                if (!hdr.fg_rd.isValid()) {
                    note(FG_ANOMALY_FG_RD_TRUNCATED);
                } else if (rd_room == 0) {
                    note(FG_ANOMALY_FG_RD_TRUNCATED);
                } else {
                    meta.bridge.fg_stampable = 1;
                }
            } else {
                meta.bridge.fg_stampable = 1;
            }
        }
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
        } else if ((control_flags & TCP_FLAG_RST) != 0) {
            event = FG_EVENT_RST;
        } else if ((control_flags & TCP_FLAG_FIN) != 0) {
            event = FG_EVENT_FIN;
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
