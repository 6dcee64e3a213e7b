/* FICCRD: resource discovery (RD) between edge switches, MAPR/DPF/ER at core
 * queues, and explicit window adaptation for unmodified TCP.
 * docs/ficcrd.md has the design, the encodings and what the controller fills.
 *
 * Port roles (tables the controller writes; a switch without entries does
 * nothing here):
 *   ficcrd_sources[ingress port]  hosts behind it send TCP: classify their
 *                                 flows, one RD every k packets of a flow
 *   ficcrd_edges[egress port]     hosts behind it: RDs routed to it end here
 *                                 (forward: turned around; backward: consumed),
 *                                 ACKs to it get their receive window lowered
 *   ficcrd_dpf[queue port, Q]     a core queue: DPF(Q) as Q6.10, Q > Q0 flag
 *
 * Ingress (FiccrdIngress): roles, RD turnaround at the destination edge.
 * Egress (FiccrdEgress): everything with state. Per-flow state (the only
 * per-flow state in FairGate, hash-indexed, FG_FICCRD_FLOWS slots) and the
 * per-port MAPR live in registers the data plane keeps for itself; the
 * controller reads the ficcrd_edge_events / ficcrd_core_events counters.
 * Per packet: a bounded number of register accesses, shifts, compares and
 * multiplications (by constants, a table's DPF, and ER x RTT); no division. */
#ifndef FG_FICCRD_P4
#define FG_FICCRD_P4

#include "headers.p4"

/* BMv2's standard_metadata.instance_type of an egress-to-egress clone. */
#define FG_INSTANCE_E2E_CLONE 2
/* 14 Ethernet + 20 IPv4 + 8 UDP + 28 fg_rate_t + 8 fg_rd_t */
#define FG_RD_IP_BYTES 64
#define FG_RD_FRAME_BYTES 78

/* Before routing: remember who sent the packet (the turnaround sends an RD
 * back to it). */
control FiccrdArrival(in headers_t hdr, inout metadata_t meta) {
    apply {
        if (hdr.fg_rd.isValid()) {
            meta.fc_prev_mac = hdr.ethernet.src_addr;
        }
    }
}

control FiccrdIngress(inout headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    @name(".set_source_port")
    action set_source_port(bit<16> rd_interval) {
        meta.fc_source = 1;
        meta.fc_rd_interval = rd_interval;
    }

    @name(".ficcrd_sources")
    table ficcrd_sources {
        key = {
            standard_metadata.ingress_port : exact @name("ingress_port");
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
        meta.fc_edge = 1;
        meta.fc_rtt_min_us = rtt_min_us;
        meta.fc_edge_port = standard_metadata.egress_spec;
    }

    @name(".ficcrd_edges")
    table ficcrd_edges {
        key = {
            standard_metadata.egress_spec : exact @name("egress_port");
        }
        actions = {
            set_edge_port;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    /* Destination edge: back to the previous hop, unchanged but for direction. */
    @name(".turn_rd")
    action turn_rd() {
        meta.fc_turned = 1;
        meta.fc_queue_port = standard_metadata.egress_spec;
        hdr.fg.kind = FG_KIND_RD_BACKWARD;
        ipv4_addr_t src = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = src;
        bit<16> sport = hdr.udp.src_port;
        hdr.udp.src_port = hdr.udp.dst_port;
        hdr.udp.dst_port = sport;
        hdr.ethernet.dst_addr = meta.fc_prev_mac;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        meta.fg_rewritten = 1;
    }

    apply {
        /* Applied to TCP segments and packets with an fg_rd header only. */
        bool fragment = hdr.ipv4.frag_offset != 0 || (hdr.ipv4.flags & 3w1) != 0;
        if (meta.fg_stampable == 1 && hdr.fg_rd.isValid()
            && (hdr.fg.kind == FG_KIND_RD_FORWARD || hdr.fg.kind == FG_KIND_RD_BACKWARD)) {
            meta.fc_rd_valid = 1;
        }
        if (hdr.tcp.isValid() && !fragment) {
            ficcrd_sources.apply();
        }
        if ((hdr.tcp.isValid() && !fragment) || meta.fc_rd_valid == 1) {
            ficcrd_edges.apply();
        }
        if (meta.fc_rd_valid == 1) {
            if (hdr.fg.kind == FG_KIND_RD_FORWARD) {
                if (meta.fc_edge == 1 && standard_metadata.ingress_port < FG_MAX_PORTS) {
                    turn_rd();
                } else {
                    meta.fc_queue_port = standard_metadata.egress_spec;
                }
            } else {
                /* Backward: the forward queue is the one towards where it came from. */
                meta.fc_queue_port = standard_metadata.ingress_port;
                meta.fc_consume = meta.fc_edge;
            }
        }
    }
}

control FiccrdEgress(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    /* Per flow (edge). */
    @name(".ficcrd_flow_key")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_key;
    @name(".ficcrd_flow_window")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_window;
    @name(".ficcrd_flow_bytes")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_bytes;
    @name(".ficcrd_flow_apr")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_apr;
    @name(".ficcrd_flow_packets")
    register<bit<16>>(FG_FICCRD_FLOWS) flow_packets;
    @name(".ficcrd_flow_er")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_er;
    @name(".ficcrd_flow_rtt")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_rtt;
    @name(".ficcrd_flow_wscale")
    register<bit<8>>(FG_FICCRD_FLOWS) flow_wscale;
    /* Per output queue (core). */
    @name(".ficcrd_mapr")
    register<bit<32>>(FG_MAX_PORTS) mapr_kbps;
    @name(".ficcrd_queue_seen")
    register<bit<19>>(FG_MAX_PORTS) queue_seen;

    @name(".ficcrd_edge_events")
    counter(FG_FICCRD_EVENT_ENTRIES, CounterType.packets_and_bytes) edge_events;
    @name(".ficcrd_core_events")
    counter(FG_FICCRD_EVENT_ENTRIES, CounterType.packets) core_events;

    @name(".set_dpf")
    action set_dpf(bit<16> dpf, bit<1> above_q0) {
        meta.fc_dpf = dpf;
        meta.fc_above_q0 = above_q0;
    }

    @name(".ficcrd_dpf")
    table ficcrd_dpf {
        key = {
            meta.fc_queue_port : exact @name("port");
            meta.fc_queue_depth : range @name("queue_depth");
        }
        actions = {
            set_dpf;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS * 32;
    }

    /* The clone of a flow's k-th packet becomes a forward RD. */
    @name(".build_rd")
    action build_rd(bit<32> now_us) {
        hdr.tcp.setInvalid();
        hdr.ipv4_options.setInvalid();
        hdr.ipv4.ihl = 5;
        hdr.ipv4.total_len = FG_RD_IP_BYTES;
        hdr.ipv4.protocol = IP_PROTO_UDP;
        hdr.udp.setValid();
        hdr.udp.src_port = FG_UDP_PORT;
        hdr.udp.dst_port = FG_UDP_PORT;
        hdr.udp.length = FG_RD_IP_BYTES - 20;
        hdr.udp.checksum = 0;
        hdr.fg.setValid();
        hdr.fg.version = FG_VERSION;
        hdr.fg.kind = FG_KIND_RD_FORWARD;
        hdr.fg.flags = 0;
        hdr.fg.reserved = 0;
        hdr.fg.seq = 0;
        hdr.fg.ack = 0;
        hdr.fg.ts_us = now_us;
        hdr.fg.ts_echo_us = 0;
        hdr.fg.rtt_us = meta.fc_rtt_us;
        hdr.fg.rate_kbps = FG_RATE_UNLIMITED;
        hdr.fg_rd.setValid();
        hdr.fg_rd.flow_key = meta.fc_flow_key;
        hdr.fg_rd.apr_kbps = meta.fc_apr_kbps;
        truncate(FG_RD_FRAME_BYTES);
        meta.fc_rd_valid = 1;
        meta.fc_queue_port = standard_metadata.egress_port;
    }

    /* RFC 1624: HC' = ~(~HC + ~m + m'). */
    @name(".rewrite_window")
    action rewrite_window(bit<16> window) {
        bit<32> sum = (bit<32>)(~hdr.tcp.checksum) + (bit<32>)(~hdr.tcp.window) + (bit<32>)window;
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        hdr.tcp.checksum = ~((bit<16>)sum);
        hdr.tcp.window = window;
    }

    apply {
        bit<32> now_us = (bit<32>)standard_metadata.egress_global_timestamp;
        bit<32> port = (bit<32>)standard_metadata.egress_port;
        bool rd_clone = standard_metadata.instance_type == FG_INSTANCE_E2E_CLONE;
        bit<3> edge_event = 0;
        bool edge_counted = false;
        bit<32> edge_port = port;

        if (rd_clone) {
            /* Stamp the RD when it entered this queue: when the source edge's
             * port is itself the bottleneck, the RD's own wait there is part
             * of the round trip (stamping at dequeue left it out, so the RD
             * RTT missed the bottleneck queue and the window limit ER x RTT
             * fell to the two-segment floor). */
            build_rd(now_us - standard_metadata.deq_timedelta);
            edge_event = FG_EDGE_RD_EMITTED;
            edge_counted = true;
        }

        /* ---- core: MAPR on forward RD, ER = min(ER, DPF * MAPR) on backward RD ---- */
        bit<19> q_prev = 0;
        if (meta.fc_rd_valid == 1 && meta.fc_queue_port < FG_MAX_PORTS) {
            bit<32> qp = (bit<32>)meta.fc_queue_port;
            if (meta.fc_queue_port == standard_metadata.egress_port) {
                meta.fc_queue_depth = (bit<32>)standard_metadata.enq_qdepth;
            } else {
                queue_seen.read(q_prev, qp);
                meta.fc_queue_depth = (bit<32>)q_prev;
            }
            if (ficcrd_dpf.apply().hit) {
                bit<32> mapr;
                mapr_kbps.read(mapr, qp);
                bit<3> core_event = FG_CORE_MAPR_HELD;
                if (hdr.fg.kind == FG_KIND_RD_FORWARD || meta.fc_turned == 1) {
                    bit<32> apr = hdr.fg_rd.apr_kbps;
                    if (apr == 0) {
                        core_event = FG_CORE_APR_UNKNOWN;
                    } else if (mapr == 0) {
                        mapr = apr;  /* first sample: start from it */
                        core_event = FG_CORE_MAPR_UPDATED;
                    } else if (apr < mapr) {
                        mapr = mapr - ((mapr - apr) >> 4);
                        core_event = FG_CORE_MAPR_UPDATED;
                    } else if (meta.fc_above_q0 == 0) {
                        mapr = mapr + ((apr - mapr) >> 4);
                        core_event = FG_CORE_MAPR_UPDATED;
                    }
                    mapr_kbps.write(qp, mapr);
                }
                if (hdr.fg.kind == FG_KIND_RD_BACKWARD) {
                    if (mapr == 0) {
                        core_event = FG_CORE_MAPR_UNKNOWN;
                    } else {
                        bit<64> target = ((bit<64>)mapr * (bit<64>)meta.fc_dpf) >> FG_DPF_SHIFT;
                        if (target < (bit<64>)hdr.fg.rate_kbps) {
                            hdr.fg.rate_kbps = (bit<32>)target;
                            meta.fg_rewritten = 1;
                            core_event = FG_CORE_ER_LOWERED;
                        } else {
                            core_event = FG_CORE_ER_KEPT;
                        }
                    }
                }
                core_events.count((qp << FG_FICCRD_EVENT_BITS) | (bit<32>)core_event);
            }
        }
        /* The queue a later backward RD will look up: sampled by every TCP
         * segment and RD leaving the port (the traffic FICCRD controls). */
        queue_seen.write(port, standard_metadata.enq_qdepth);

        /* ---- edge ---- */
        if (rd_clone) {
            /* counted above */
        } else if (meta.fc_consume == 1) {
            /* Source edge: keep ER and the RD round trip, drop the RD. */
            bit<32> idx = hdr.fg_rd.flow_key & FG_FICCRD_FLOW_MASK;
            bit<32> stored;
            flow_key.read(stored, idx);
            if (stored == hdr.fg_rd.flow_key) {
                flow_er.write(idx, hdr.fg.rate_kbps);
                flow_rtt.write(idx, now_us - hdr.fg.ts_us);
                edge_event = FG_EDGE_RD_CONSUMED;
            } else {
                edge_event = FG_EDGE_RD_STALE;
            }
            edge_counted = true;
            mark_to_drop(standard_metadata);
            meta.dropped = 1;
        } else if (meta.fc_turned == 1) {
            edge_event = FG_EDGE_RD_TURNED;
            edge_port = (bit<32>)meta.fc_edge_port;
            edge_counted = true;
        } else if (hdr.tcp.isValid() && meta.fc_source == 1 && meta.fc_edge == 0) {
            /* Source edge, a packet of a TCP flow entering the network. */
            bit<32> key;
            hash(key, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                   hdr.tcp.src_port, hdr.tcp.dst_port },
                 32w0xffffffff);
            bit<32> idx = key & FG_FICCRD_FLOW_MASK;
            bit<32> stored;
            flow_key.read(stored, idx);
            bit<32> win_now = (bit<32>)(standard_metadata.egress_global_timestamp >> FG_FICCRD_WINDOW_SHIFT);
            bit<32> length = standard_metadata.packet_length;
            bit<32> apr;
            bit<32> rtt;
            bit<16> packets;
            bool syn = (hdr.tcp.flags & TCP_FLAG_SYN) != 0;
            if (stored != key || syn) {
                /* A new flow (or a new connection on the same 5-tuple) takes the slot. */
                flow_key.write(idx, key);
                flow_window.write(idx, win_now);
                flow_bytes.write(idx, length);
                apr = 0;
                rtt = 0;
                packets = 0;
                flow_apr.write(idx, 0);
                flow_er.write(idx, FG_RATE_UNLIMITED);
                flow_rtt.write(idx, 0);
                flow_wscale.write(idx, 0);
                edge_event = FG_EDGE_FLOW_STARTED;
                edge_counted = true;
            } else {
                bit<32> win;
                bit<32> bytes;
                flow_window.read(win, idx);
                flow_bytes.read(bytes, idx);
                flow_apr.read(apr, idx);
                flow_rtt.read(rtt, idx);
                flow_packets.read(packets, idx);
                if (win != win_now) {
                    /* Close the window: kbit/s = bytes * 8000 / 65536 = bytes * 125 >> 10. */
                    bit<64> b = (bit<64>)bytes;
                    apr = (bit<32>)(((b << 7) - (b << 1) - b) >> 10);
                    flow_apr.write(idx, apr);
                    flow_window.write(idx, win_now);
                    flow_bytes.write(idx, length);
                } else {
                    flow_bytes.write(idx, bytes + length);
                }
            }
            packets = packets + 1;
            if (meta.fc_rd_interval != 0 && packets >= meta.fc_rd_interval && !syn) {
                packets = 0;
                meta.fc_flow_key = key;
                meta.fc_apr_kbps = apr;
                meta.fc_rtt_us = rtt;
                clone_preserving_field_list(CloneType.E2E,
                    (bit<32>)FG_RD_SESSION_BASE + port, FG_RD_FIELD_LIST);
            }
            flow_packets.write(idx, packets);
        } else if (hdr.tcp.isValid() && meta.fc_edge == 1 && meta.fc_source == 0) {
            /* Source edge, a segment going back to a TCP sender. */
            bit<32> key;
            hash(key, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.dst_addr, hdr.ipv4.src_addr, hdr.ipv4.protocol,
                   hdr.tcp.dst_port, hdr.tcp.src_port },
                 32w0xffffffff);
            bit<32> idx = key & FG_FICCRD_FLOW_MASK;
            bit<32> stored;
            flow_key.read(stored, idx);
            bit<8> control_flags = hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK | TCP_FLAG_RST);
            if (stored == key) {
                if (control_flags == (TCP_FLAG_SYN | TCP_FLAG_ACK)) {
                    /* The receiver's shift applies to every later window it sends. */
                    bit<8> shift = 0;
                    if (meta.tcp_wscale_seen == 1) {
                        shift = meta.tcp_wscale;
                        if (shift > FG_TCP_MAX_WSCALE) {
                            shift = FG_TCP_MAX_WSCALE;
                        }
                    }
                    flow_wscale.write(idx, shift);
                    edge_event = FG_EDGE_WSCALE_LEARNED;
                    edge_counted = true;
                } else if (control_flags == TCP_FLAG_ACK) {
                    bit<32> er;
                    flow_er.read(er, idx);
                    if (er != FG_RATE_UNLIMITED) {
                        bit<32> rtt;
                        bit<8> shift;
                        flow_rtt.read(rtt, idx);
                        flow_wscale.read(shift, idx);
                        if (rtt < meta.fc_rtt_min_us) {
                            rtt = meta.fc_rtt_min_us;
                        }
                        /* bytes = ER[kbit/s] * RTT[us] / 8000 ~ >> 13 (2.3 % low) */
                        bit<64> limit = ((bit<64>)er * (bit<64>)rtt) >> 13;
                        if (limit < FG_FICCRD_MIN_WINDOW) {
                            limit = FG_FICCRD_MIN_WINDOW;
                        }
                        limit = limit >> shift;
                        if (limit == 0) {
                            limit = 1;
                        }
                        if (limit < (bit<64>)hdr.tcp.window) {
                            rewrite_window((bit<16>)limit);
                            edge_event = FG_EDGE_WINDOW_REWRITTEN;
                            edge_counted = true;
                        }
                    }
                }
            }
        }
        if (edge_counted && edge_port < FG_MAX_PORTS) {
            edge_events.count((edge_port << FG_FICCRD_EVENT_BITS) | (bit<32>)edge_event);
        }
    }
}

#endif
