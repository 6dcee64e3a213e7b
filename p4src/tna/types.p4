/* TNA-only types: what v1model does not need. Every wire header (ethernet_t,
 * ipv4_t, tcp_t, udp_t, fg_rate_t, fg_rd_t) and every constant comes from
 * ../include/headers.p4 and ../include/defines.p4, the same files the v1model
 * program compiles, so the two targets cannot disagree on a layout. */
#ifndef FG_TNA_TYPES_P4
#define FG_TNA_TYPES_P4

#include "../include/headers.p4"

/* 14 Ethernet + 20 IPv4 + 8 UDP + 28 fg_rate_t + 8 fg_rd_t */
#define FG_RD_IP_BYTES 64

/* First byte of what the egress parser sees before the packet. */
#define FG_TNA_BRIDGED 1
#define FG_TNA_MIRRORED 2
/* eg_dprsr_md.mirror_type of an RD clone. */
#define FG_TNA_MIRROR_RD 1
/* Egress clock: egress_global_tstamp (ns) >> 10, one tick = 1.024 us. */
#define FG_TNA_TICK_SHIFT 10
/* MAPR: a 16-sample moving sum per queue (see ficcrd.p4). */
#define FG_TNA_MAPR_SAMPLES 256
/* ficcrd_flow_rwnd of a flow without an ER (v1model: ER all-ones): no
 * window is larger, so nothing is rewritten. */
#define FG_TNA_NO_WINDOW 0xffff
/* Window scale shift in log units (32 per bit). */
#define FG_TNA_LOG_ONE_SHIFT 5

/* Ingress -> egress: the ingress decisions egress needs (v1model keeps them
 * in metadata_t, which BMv2 carries across the queue for free). Each flag
 * sits in the low bit of its own byte: fields that one MAU operation copies
 * into each other must share their alignment in the packet. */
header fg_bridge_t {
    bit<8>    kind;              /* FG_TNA_BRIDGED */
    bit<7>    pad_fg_stampable;
    bit<1>    fg_stampable;
    bit<7>    pad_fc_source;
    bit<1>    fc_source;
    bit<7>    pad_fc_edge;
    bit<1>    fc_edge;
    bit<7>    pad_fc_rd_valid;
    bit<1>    fc_rd_valid;
    bit<7>    pad_fc_turned;
    bit<1>    fc_turned;
    bit<7>    pad_fc_consume;
    bit<1>    fc_consume;
    bit<7>    pad_fc_queue_here;
    bit<1>    fc_queue_here;  /* fc_queue_port is this packet's egress port */
    bit<7>    pad_tcp_wscale_seen;
    bit<1>    tcp_wscale_seen;
    bit<16>   fc_rd_interval;
    bit<32>   fc_rtt_min_us;
    bit<32>   fc_fkey;         /* FICCRD edge: the flow key (CRC32 of the 5-tuple, or an RD's) */
    bit<7>    pad0;
    port_id_t fc_edge_port;
    bit<7>    pad1;
    port_id_t fc_queue_port;
    bit<8>    tcp_wscale;
}

/* Carried into an RD clone (v1model: @field_list(FG_RD_FIELD_LIST)). */
header fg_rd_mirror_t {
    bit<8>  kind;                /* FG_TNA_MIRRORED */
    bit<32> flow_key;
    bit<32> apr_kbps;
    bit<32> rtt_us;
}

/* One FICCRD rate window: which window and the bytes in it (v1model keeps
 * them in two registers; a Tofino stateful ALU updates both in one access). */
struct fg_window_pair_t {
    bit<32> window;
    bit<32> bytes;
}

/* A per-flow value with the flow key it belongs to: the stateful ALU checks
 * the key itself. */
struct fg_key_pair_t {
    bit<32> key;
    bit<32> value;
}

/* FICCRD values that its RegisterActions read (metadata, so that the
 * parser initialises them). */
struct fg_ficcrd_scratch_t {
    bit<32> win_now;      /* current rate window */
    bit<32> pkt_bytes;
    bit<32> apr;          /* the flow's arrival rate, kbit/s */
    bit<16> interval_m1;  /* RD interval - 1 */
    bit<32> rtt_new;      /* an RD's round trip */
    bit<8>  shift_in;     /* the receiver's window scale (SYN-ACK) */
    bit<32> now_us;       /* egress clock, 1.024 us ticks */
    bit<32> stamp_us;     /* an RD clone's time stamp: when it was queued */
    bit<32> syn_us;       /* when the flow's SYN left (0: none to take) */
    bit<32> rd_minus;     /* an RD's time stamp minus now (minus its round trip) */
    bit<32> closed_bytes; /* bytes of the rate window a packet closed */
    bit<16> new_window;   /* receive window an RD gives its flow */
    bit<32> shift;        /* the flow's window scale (an RD's lookup) */
    bit<32> log_in_rtt;   /* an RD's round trip + the handshake's */
    bit<32> sample;       /* APR sample for MAPR */
    bit<32> sample_delta; /* sample - the sample it replaces */
}

struct tna_headers_t {
    ethernet_t     ethernet;
    ipv4_t         ipv4;
    tcp_t          tcp;
    udp_t          udp;
    fg_rate_t      fg;
    fg_rd_t        fg_rd;
    fg_xcp_t       fg_xcp;
}

struct tna_ingress_meta_t {
    fg_bridge_t bridge;          /* filled by ingress, emitted first */
    bit<8>  anomaly;             /* the one counted (input_anomalies) */
    bit<8>  sanity_anomaly;
    bit<8>  l4_anomaly;
    bit<8>  syn_anomaly;
    bit<8>  fg_anomaly;
    bit<1>  sanity_drop;
    bit<1>  no_route;
    bit<1>  syn_drop;
    bit<1>  meter_drop;
    bool    checksum_error;
    bit<1>  ipv4_options;        /* ihl > 5: options are left as payload */
    bit<1>  fg_rewritten;        /* ingress turned an RD around */
    bit<1>  udp_csum_update;
    bit<16> ipv4_residual;       /* IPv4 checksum without ttl/protocol */
    bit<8>  ipv4_ttl_in;         /* the TTL as it arrived (routing decrements hdr.ipv4.ttl) */
    bit<16> udp_residual;        /* UDP checksum without fg version/kind */
    bit<48> fc_prev_mac;
    bit<8>  syn_color;  /* MeterColor_t (v1model: bit<2>) */
    bit<8>  tcp_wscale;
    bit<1>  tcp_wscale_seen;
}

struct tna_egress_meta_t {
    fg_bridge_t    bridge;
    fg_rd_mirror_t rd_mirror;
    bit<1>  is_rd_clone;
    bit<1>  fg_rewritten;
    bit<1>  udp_csum_update;
    bit<1>  tcp_csum_update;
    bit<1>  ipv4_csum_update;
    bit<1>  udp_has_csum;        /* the UDP checksum is not 0 (not 'none') */
    bit<1>  dropped;
    bit<16> udp_residual;        /* UDP checksum without the rewritable fg fields */
    bit<16> tcp_residual;        /* TCP checksum without the window */
    bit<32> fair_rate_kbps;
    bit<1>  port_congested;
    bit<1>  fb_hit;              /* port_feedback has an entry */
    bit<8>  port_congested_flag; /* FG_FLAG_CONGESTED or 0 */
    bit<1>  fb_data;             /* a data packet RateFeedback may stamp */
    bit<1>  er_lower;            /* FICCRD core: ER > this queue's */
    bit<32> er_rate;
    bit<8>  queue_bucket;
    bit<8>  rtt_bucket;
    bit<8>  xcp_bucket;          /* xcp_ratio_buckets' choice */
    bit<32> xcp_xi_p;            /* lg_xi_p of xcp_factors, zero-extended (FG_XCP_LG_NONE: none) */
    bit<32> xcp_xi_n;
    bit<1>  xcp_factors_hit;
    MirrorId_t mirror_session;
    /* FICCRD core */
    bit<16> fc_dpf;
    bit<1>  fc_above_q0;
    bit<19> fc_queue_depth;      /* enq_qdepth's width (v1model: bit<32>) */
    fg_ficcrd_scratch_t fc;
}

#endif
