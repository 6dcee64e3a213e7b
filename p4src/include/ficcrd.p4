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
#include "flow_tuple.p4"

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
        /* Swaps by XOR: no local (on BMv2 a field reset per packet). */
        hdr.ipv4.src_addr = hdr.ipv4.src_addr ^ hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.dst_addr ^ hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = hdr.ipv4.src_addr ^ hdr.ipv4.dst_addr;
        hdr.udp.src_port = hdr.udp.src_port ^ hdr.udp.dst_port;
        hdr.udp.dst_port = hdr.udp.dst_port ^ hdr.udp.src_port;
        hdr.udp.src_port = hdr.udp.src_port ^ hdr.udp.dst_port;
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

/* FiccrdEgress's scratch variables. A header, so that BMv2 does not reset
 * them for every packet: every local variable is a metadata field, and BMv2
 * sets every metadata field to 0 before each packet, FICCRD traffic or not
 * (15 fields cost a data packet more than everything FICCRD does to it;
 * docs/performance.md "Pipeline"). A header costs one validity bit instead.
 * It is made valid where FICCRD starts, never emitted, and every field is
 * written before it is read. */
header ficcrd_scratch_t {
    bit<32> now_us;     /* egress clock, microseconds */
    bit<32> port;       /* egress port */
    bit<32> idx;        /* flow slot (edge) or queue port (core) */
    bit<32> stored;     /* flow key the slot holds */
    bit<32> gap;        /* us since the flow's previous packet */
    bit<32> er;         /* the flow's explicit rate */
    bit<32> syn_us;     /* when the flow's SYN left (0: no SYN seen) */
    bit<32> base_rtt;   /* the flow's handshake round trip (0: unknown) */
    bit<32> edge_port;  /* the port an edge event is counted on (FG_MAX_PORTS: none) */
    bit<32> session;    /* the clone session of an RD (clone_rd) */
    bit<64> wide;       /* products: DPF x MAPR, ER x RTT, length x 8000 */
    bit<64> loss;       /* gap x APR, then the APR step */
    bit<16> packets;    /* packets since the flow's last RD */
    bit<8>  shift;      /* the receiver's window scale */
    bit<19> depth;      /* queue depth last seen at a port */
    bit<3>  event;      /* the core event, then the edge event */
    bit<2>  pad;        /* BMv2 headers are whole bytes */
}

control FiccrdEgress(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    /* Per flow (edge). */
    @name(".ficcrd_flow_key")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_key;
    /* When the flow's previous packet left the edge (us), and its APR. */
    @name(".ficcrd_flow_last_us")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_last_us;
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
    /* When the flow's SYN left the edge, then the handshake round trip
     * (SYN to the sender's next segment), which holds the access delays
     * that an edge-to-edge RD never sees. 0 = unknown. */
    @name(".ficcrd_flow_syn_us")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_syn_us;
    @name(".ficcrd_flow_base_rtt")
    register<bit<32>>(FG_FICCRD_FLOWS) flow_base_rtt;
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

    /* Scratch, shared by every branch below. On BMv2 every local variable,
     * and every temporary p4c makes for a computed argument of an extern
     * call, is a metadata field that is reset for every packet, FICCRD
     * traffic or not: with a local per branch and register calls in the
     * apply block this control cost 72 fields and 30 % of the switch's
     * forwarding rate (docs/ficcrd.md, "Cost on BMv2"). So branches share
     * the scratch, it lives in two headers (s, t: one validity bit each per
     * packet, not a field per variable), and register and counter calls live
     * in the actions below with plain fields as arguments, which p4c passes
     * without temporaries (an argument computed in the same action is one:
     * p4c propagates it). The flow key, its APR (the queue's MAPR in the
     * core) and its RD round trip are kept in meta.fc_flow_key, fc_apr_kbps
     * and fc_rtt_us, the fields that carry them into an RD clone (clone_rd)
     * anyway; counter indexes in meta.index. */
    ficcrd_scratch_t s;
    flow_tuple_t t;     /* the flow's 5-tuple, hashed into its key */
    bool    apr_up;     /* the APR step is upwards (p4c keeps it in expressions) */

    @hidden
    action read_queue_seen() {
        queue_seen.read(s.depth, s.idx);
    }

    @hidden
    action write_queue_seen() {
        queue_seen.write(s.port, standard_metadata.enq_qdepth);
    }

    @hidden
    action read_mapr() {
        mapr_kbps.read(meta.fc_apr_kbps, s.idx);
    }

    @hidden
    action write_mapr() {
        mapr_kbps.write(s.idx, meta.fc_apr_kbps);
    }

    /* meta.index is set in the apply block: computed here, p4c would pass
     * the counter a temporary (one more field per packet). */
    @hidden
    action count_core_event() {
        core_events.count(meta.index);
    }

    @hidden
    action count_edge_event() {
        edge_events.count(meta.index);
    }

    @hidden
    action read_slot_key() {
        flow_key.read(s.stored, s.idx);
    }

    @hidden
    action write_er_rtt() {
        flow_er.write(s.idx, s.er);
        flow_rtt.write(s.idx, meta.fc_rtt_us);
    }

    @hidden
    action read_flow() {
        flow_key.read(s.stored, s.idx);
        flow_last_us.read(s.gap, s.idx);
        flow_apr.read(meta.fc_apr_kbps, s.idx);
        flow_rtt.read(meta.fc_rtt_us, s.idx);
        flow_packets.read(s.packets, s.idx);
        flow_syn_us.read(s.syn_us, s.idx);
        flow_base_rtt.read(s.base_rtt, s.idx);
    }

    /* A new flow (or a new connection on the same 5-tuple) takes the slot. */
    @hidden
    action start_flow() {
        meta.fc_apr_kbps = 0;
        s.er = FG_RATE_UNLIMITED;
        meta.fc_rtt_us = 0;
        s.packets = 0;
        s.shift = 0;
        s.base_rtt = 0;
        flow_key.write(s.idx, meta.fc_flow_key);
        flow_last_us.write(s.idx, s.now_us);
        flow_apr.write(s.idx, meta.fc_apr_kbps);
        flow_er.write(s.idx, s.er);
        flow_rtt.write(s.idx, meta.fc_rtt_us);
        flow_wscale.write(s.idx, s.shift);
        flow_syn_us.write(s.idx, s.syn_us);
        flow_base_rtt.write(s.idx, s.base_rtt);
    }

    @hidden
    action write_base_rtt() {
        flow_base_rtt.write(s.idx, s.base_rtt);
    }

    @hidden
    action write_apr() {
        flow_last_us.write(s.idx, s.now_us);
        flow_apr.write(s.idx, meta.fc_apr_kbps);
    }

    @hidden
    action write_packets() {
        flow_packets.write(s.idx, s.packets);
    }

    /* s.session is set before the call: computed here, p4c would pass a
     * temporary (a field reset per packet). */
    @hidden
    action clone_rd() {
        clone_preserving_field_list(CloneType.E2E, s.session, FG_RD_FIELD_LIST);
    }

    @hidden
    action read_window_state() {
        flow_key.read(s.stored, s.idx);
        flow_er.read(s.er, s.idx);
        flow_rtt.read(meta.fc_rtt_us, s.idx);
        flow_wscale.read(s.shift, s.idx);
        flow_base_rtt.read(s.base_rtt, s.idx);
    }

    @hidden
    action write_wscale() {
        flow_wscale.write(s.idx, s.shift);
    }

    /* RFC 1624: HC' = ~(~HC + ~m + m'); the new window (in `wide`) waits
     * in `loss` (free in this branch) while the sum reuses `wide`. */
    @name(".rewrite_window")
    action rewrite_window() {
        s.loss = s.wide;
        s.wide = (bit<64>)(~hdr.tcp.checksum) + (bit<64>)(~hdr.tcp.window) + (bit<64>)(bit<16>)s.loss;
        s.wide = (s.wide & 0xffff) + (s.wide >> 16);
        s.wide = (s.wide & 0xffff) + (s.wide >> 16);
        hdr.tcp.checksum = ~((bit<16>)s.wide);
        hdr.tcp.window = (bit<16>)s.loss;
    }

    /* The flow key: CRC-32 of the 5-tuple, copied into t first. Given a
     * list of header fields, p4c copies each into a temporary of its own
     * (a field reset per packet, five in all); given a header, it hashes
     * the header's fields in place. */
    @hidden
    action hash_flow() {
        t.src_addr = hdr.ipv4.src_addr;
        t.dst_addr = hdr.ipv4.dst_addr;
        t.protocol = hdr.ipv4.protocol;
        t.src_port = hdr.tcp.src_port;
        t.dst_port = hdr.tcp.dst_port;
        hash(meta.fc_flow_key, HashAlgorithm.crc32, 32w0, t, 32w0xffffffff);
        s.idx = meta.fc_flow_key & FG_FICCRD_FLOW_MASK;
    }

    /* The key of the flow a segment going back to a sender answers: its
     * endpoints swapped. */
    @hidden
    action hash_answered_flow() {
        t.src_addr = hdr.ipv4.dst_addr;
        t.dst_addr = hdr.ipv4.src_addr;
        t.protocol = hdr.ipv4.protocol;
        t.src_port = hdr.tcp.dst_port;
        t.dst_port = hdr.tcp.src_port;
        hash(meta.fc_flow_key, HashAlgorithm.crc32, 32w0, t, 32w0xffffffff);
        s.idx = meta.fc_flow_key & FG_FICCRD_FLOW_MASK;
    }

    apply {
        s.setValid();
        t.setValid();
        s.now_us = (bit<32>)standard_metadata.egress_global_timestamp;
        s.port = (bit<32>)standard_metadata.egress_port;
        s.edge_port = FG_MAX_PORTS;  /* no edge event yet */
        s.event = 0;

        if (standard_metadata.instance_type == FG_INSTANCE_E2E_CLONE) {
            /* Stamp the RD when it entered this queue: when the source edge's
             * port is itself the bottleneck, the RD's own wait there is part
             * of the round trip (stamping at dequeue left it out, so the RD
             * RTT missed the bottleneck queue and the window limit ER x RTT
             * fell to the two-segment floor). */
            build_rd(s.now_us - standard_metadata.deq_timedelta);
        }

        /* ---- core: MAPR on forward RD, ER = min(ER, DPF * MAPR) on backward RD ---- */
        if (meta.fc_rd_valid == 1 && meta.fc_queue_port < FG_MAX_PORTS) {
            s.idx = (bit<32>)meta.fc_queue_port;
            if (meta.fc_queue_port == standard_metadata.egress_port) {
                meta.fc_queue_depth = (bit<32>)standard_metadata.enq_qdepth;
            } else {
                read_queue_seen();
                meta.fc_queue_depth = (bit<32>)s.depth;
            }
            if (ficcrd_dpf.apply().hit) {
                read_mapr();  /* apr holds MAPR here */
                s.event = FG_CORE_MAPR_HELD;
                if (hdr.fg.kind == FG_KIND_RD_FORWARD || meta.fc_turned == 1) {
                    if (hdr.fg_rd.apr_kbps == 0) {
                        s.event = FG_CORE_APR_UNKNOWN;
                    } else if (meta.fc_apr_kbps == 0) {
                        meta.fc_apr_kbps = hdr.fg_rd.apr_kbps;  /* first sample: start from it */
                        s.event = FG_CORE_MAPR_UPDATED;
                    } else if (hdr.fg_rd.apr_kbps < meta.fc_apr_kbps) {
                        meta.fc_apr_kbps = meta.fc_apr_kbps - ((meta.fc_apr_kbps - hdr.fg_rd.apr_kbps) >> 4);
                        s.event = FG_CORE_MAPR_UPDATED;
                    } else if (meta.fc_above_q0 == 0) {
                        meta.fc_apr_kbps = meta.fc_apr_kbps + ((hdr.fg_rd.apr_kbps - meta.fc_apr_kbps) >> 4);
                        s.event = FG_CORE_MAPR_UPDATED;
                    }
                    write_mapr();
                }
                if (hdr.fg.kind == FG_KIND_RD_BACKWARD) {
                    if (meta.fc_apr_kbps == 0) {
                        s.event = FG_CORE_MAPR_UNKNOWN;
                    } else {
                        s.wide = ((bit<64>)meta.fc_apr_kbps * (bit<64>)meta.fc_dpf) >> FG_DPF_SHIFT;
                        if (s.wide < (bit<64>)hdr.fg.rate_kbps) {
                            hdr.fg.rate_kbps = (bit<32>)s.wide;
                            meta.fg_rewritten = 1;
                            s.event = FG_CORE_ER_LOWERED;
                        } else {
                            s.event = FG_CORE_ER_KEPT;
                        }
                    }
                }
                meta.index = (s.idx << FG_FICCRD_EVENT_BITS) | (bit<32>)s.event;
                count_core_event();
            }
        }
        /* The queue a later backward RD will look up: sampled by every TCP
         * segment and RD leaving the port (the traffic FICCRD controls). */
        write_queue_seen();

        /* ---- edge ---- */
        if (standard_metadata.instance_type == FG_INSTANCE_E2E_CLONE) {
            s.event = FG_EDGE_RD_EMITTED;
            s.edge_port = s.port;
        } else if (meta.fc_consume == 1) {
            /* Source edge: keep ER and the RD round trip, drop the RD. */
            s.idx = hdr.fg_rd.flow_key & FG_FICCRD_FLOW_MASK;
            read_slot_key();
            if (s.stored == hdr.fg_rd.flow_key) {
                s.er = hdr.fg.rate_kbps;
                meta.fc_rtt_us = s.now_us - hdr.fg.ts_us;
                write_er_rtt();
                s.event = FG_EDGE_RD_CONSUMED;
            } else {
                s.event = FG_EDGE_RD_STALE;
            }
            s.edge_port = s.port;
            mark_to_drop(standard_metadata);
            meta.dropped = 1;
        } else if (meta.fc_turned == 1) {
            s.event = FG_EDGE_RD_TURNED;
            s.edge_port = (bit<32>)meta.fc_edge_port;
        } else if (hdr.tcp.isValid() && meta.fc_source != meta.fc_edge) {
            /* A TCP segment at a source edge. Its flow key, or for a segment
             * going back to a sender the key of the flow it answers (one hash
             * call site: p4c gives each its own temporaries). */
            if (meta.fc_edge == 1) {
                hash_answered_flow();
            } else {
                hash_flow();
            }
            if (meta.fc_source == 1) {
                /* Source edge, a packet of a TCP flow entering the network. */
                read_flow();  /* gap holds the previous packet's time here */
                if (s.stored != meta.fc_flow_key || (hdr.tcp.flags & TCP_FLAG_SYN) != 0) {
                    /* Only a SYN starts a handshake measurement; a flow first
                     * seen mid-connection (or evicting another) has none. */
                    s.syn_us = 0;
                    if ((hdr.tcp.flags & TCP_FLAG_SYN) != 0) {
                        s.syn_us = s.now_us;
                    }
                    start_flow();
                    s.event = FG_EDGE_FLOW_STARTED;
                    s.edge_port = s.port;
                } else {
                    /* APR, the paper's Eqn. (1) (CSFQ's exponential average,
                     * K = 2^FG_FICCRD_APR_SHIFT us), with shifts and compares
                     * only, exactly as docs/ficcrd.md "Arrival rate" writes it:
                     * below K, APR += c(T) x (length x 8000 - T x APR) / K with
                     * c(T) = (1 - e^-x)/x (x = T/K) per octave of T; from K up,
                     * APR = w x APR + g x length x 8000 / K per octave. */
                    s.gap = s.now_us - s.gap;
                    s.wide = (bit<64>)standard_metadata.packet_length;
                    s.wide = (s.wide << 13) - (s.wide << 7) - (s.wide << 6);  /* x 8000 */
                    if (s.gap >= (32w4 << FG_FICCRD_APR_SHIFT)) {
                        meta.fc_apr_kbps = (bit<32>)(((s.wide >> 3) + (s.wide >> 4)) >> FG_FICCRD_APR_SHIFT);
                    } else if (s.gap >= (32w2 << FG_FICCRD_APR_SHIFT)) {
                        meta.fc_apr_kbps = (meta.fc_apr_kbps >> 4) + (bit<32>)(((s.wide >> 2) + (s.wide >> 4) + (s.wide >> 6))
                                                     >> FG_FICCRD_APR_SHIFT);
                    } else if (s.gap >= (32w1 << FG_FICCRD_APR_SHIFT)) {
                        meta.fc_apr_kbps = (meta.fc_apr_kbps >> 2) + (bit<32>)(((s.wide >> 1) + (s.wide >> 5))
                                                     >> FG_FICCRD_APR_SHIFT);
                    } else {
                        s.loss = (bit<64>)s.gap * (bit<64>)meta.fc_apr_kbps;
                        apr_up = s.wide >= s.loss;
                        if (apr_up) {
                            s.loss = s.wide - s.loss;
                        } else {
                            s.loss = s.loss - s.wide;
                        }
                        if (s.gap >= (32w1 << (FG_FICCRD_APR_SHIFT - 1))) {
                            s.loss = s.loss - (s.loss >> 2) - (s.loss >> 5);
                        } else if (s.gap >= (32w1 << (FG_FICCRD_APR_SHIFT - 2))) {
                            s.loss = s.loss - (s.loss >> 3) - (s.loss >> 5);
                        } else if (s.gap >= (32w1 << (FG_FICCRD_APR_SHIFT - 3))) {
                            s.loss = s.loss - (s.loss >> 4) - (s.loss >> 5);
                        } else if (s.gap >= (32w1 << (FG_FICCRD_APR_SHIFT - 4))) {
                            s.loss = s.loss - (s.loss >> 5) - (s.loss >> 6);
                        }
                        if (apr_up) {
                            meta.fc_apr_kbps = meta.fc_apr_kbps + (bit<32>)(s.loss >> FG_FICCRD_APR_SHIFT);
                        } else {
                            meta.fc_apr_kbps = meta.fc_apr_kbps - (bit<32>)(s.loss >> FG_FICCRD_APR_SHIFT);
                        }
                    }
                    write_apr();
                    if (s.base_rtt == 0 && s.syn_us != 0) {
                        /* The sender's first segment after its SYN: it has seen
                         * the SYN-ACK, so SYN -> here is one full round trip,
                         * access links included. (0 us reads as 1: "known".) */
                        s.base_rtt = s.now_us - s.syn_us;
                        if (s.base_rtt == 0) {
                            s.base_rtt = 1;
                        }
                        write_base_rtt();
                        s.event = FG_EDGE_BASE_RTT_LEARNED;
                        s.edge_port = s.port;
                    }
                }
                s.packets = s.packets + 1;
                if (meta.fc_rd_interval != 0 && s.packets >= meta.fc_rd_interval
                    && (hdr.tcp.flags & TCP_FLAG_SYN) == 0) {
                    s.packets = 0;
                    s.session = FG_RD_SESSION_BASE + s.port;
                    clone_rd();
                }
                write_packets();
            } else {
                /* Source edge, a segment going back to a TCP sender. */
                read_window_state();
                if (s.stored == meta.fc_flow_key) {
                    if ((hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK | TCP_FLAG_RST))
                        == (TCP_FLAG_SYN | TCP_FLAG_ACK)) {
                        /* The receiver's shift applies to every later window it sends. */
                        s.shift = 0;
                        if (meta.tcp_wscale_seen == 1) {
                            s.shift = meta.tcp_wscale;
                            if (s.shift > FG_TCP_MAX_WSCALE) {
                                s.shift = FG_TCP_MAX_WSCALE;
                            }
                        }
                        write_wscale();
                        s.event = FG_EDGE_WSCALE_LEARNED;
                        s.edge_port = s.port;
                    } else if ((hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK | TCP_FLAG_RST))
                               == TCP_FLAG_ACK && s.er != FG_RATE_UNLIMITED) {
                        /* The sender's round trip: the RD's (edge to edge, queues
                         * included) plus the handshake's (access links; it also
                         * holds the core's propagation delay and whatever queue
                         * there was then, so this errs high, which the core's
                         * DPF corrects, rather than low, which would ratchet
                         * every window down to the floor). */
                        meta.fc_rtt_us = meta.fc_rtt_us + s.base_rtt;
                        if (meta.fc_rtt_us < meta.fc_rtt_min_us) {
                            meta.fc_rtt_us = meta.fc_rtt_min_us;
                        }
                        /* bytes = ER[kbit/s] * RTT[us] / 8000 ~ >> 13 (2.3 % low) */
                        s.wide = ((bit<64>)s.er * (bit<64>)meta.fc_rtt_us) >> 13;
                        if (s.wide < FG_FICCRD_MIN_WINDOW) {
                            s.wide = FG_FICCRD_MIN_WINDOW;
                        }
                        s.wide = s.wide >> s.shift;
                        if (s.wide == 0) {
                            s.wide = 1;
                        }
                        if (s.wide < (bit<64>)hdr.tcp.window) {
                            rewrite_window();
                            s.event = FG_EDGE_WINDOW_REWRITTEN;
                            s.edge_port = s.port;
                        }
                    }
                }
            }
        }
        if (s.edge_port < FG_MAX_PORTS) {
            meta.index = (s.edge_port << FG_FICCRD_EVENT_BITS) | (bit<32>)s.event;
            count_edge_event();
        }
    }
}

#endif
