/* Header layouts and per-packet metadata. Python reads these layouts from the
 * compiled BMv2 JSON (fairgate_p4.gen), so a change here reaches the hosts
 * and the tests through `make build`, never by hand. */
#ifndef FG_HEADERS_P4
#define FG_HEADERS_P4

#include "defines.p4"

typedef bit<9>  port_id_t;
typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

/* IPv4 options (ihl 6..15): up to 40 bytes, carried through unchanged. */
header ipv4_options_t {
    varbit<320> options;
}

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  reserved;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/*
 * The FairGate rate header: FG_HEADER_BYTES (28) bytes at the start of the
 * payload of a UDP datagram to or from FG_UDP_PORT. Network byte order.
 *
 *   version     FG_VERSION; other versions are forwarded untouched
 *   kind        FG_KIND_* (data, ack, probe, probe-ack, rd-forward, rd-backward)
 *   flags       bit 0: FG_FLAG_CONGESTED (set by a switch on data packets)
 *               bit 1: FG_FLAG_PROBE (data carrying a CM probe, its number in ack)
 *   reserved    sent as 0, ignored
 *   seq         sender's packet sequence number (data); acked sequence (ack)
 *   ack         receiver's cumulative ack: next sequence expected (ack);
 *               data with FG_FLAG_PROBE: the probe's number
 *   ts_us       sender's clock when sent, microseconds (wraps at 2^32)
 *   ts_echo_us  ts_us of the data packet this ack answers (ack)
 *   rtt_us      sender's smoothed RTT estimate, microseconds; 0 = unknown
 *   rate_kbps   data: rate requested, min-stamped by every switch on the path;
 *               ack: the stamped rate echoed back. kbit/s; all-ones = no limit
 */
header fg_rate_t {
    bit<8>  version;
    bit<8>  kind;
    bit<8>  flags;
    bit<8>  reserved;
    bit<32> seq;
    bit<32> ack;
    bit<32> ts_us;
    bit<32> ts_echo_us;
    bit<32> rtt_us;
    bit<32> rate_kbps;
}

/* One byte of TCP options. Options are parsed (one byte each, into a stack,
 * so that they are re-emitted in order) only on SYN segments, where the
 * window scale option lives; on every other segment they stay payload. */
header tcp_opt_byte_t {
    bit<8> value;
}

/*
 * FICCRD resource-discovery extension: FG_RD_HEADER_BYTES (8) bytes right
 * after fg_rate_t when kind is FG_KIND_RD_FORWARD or FG_KIND_RD_BACKWARD.
 * The RD also uses fg_rate_t: ts_us = source edge clock at emission,
 * rate_kbps = ER (all-ones = no limit yet), rtt_us = the flow's last RD RTT.
 *
 *   flow_key    32-bit hash of the flow's 5-tuple at the source edge; its low
 *               bits index the edge's per-flow state, the whole key guards it
 *   apr_kbps    the flow's arrival rate at the source edge, kbit/s
 */
header fg_rd_t {
    bit<32> flow_key;
    bit<32> apr_kbps;
}

/*
 * XCP congestion header (Katabi, Handley, Rohrs 2002): FG_XCP_HEADER_BYTES
 * (12) bytes right after fg_rate_t when kind is FG_KIND_XCP_DATA or
 * FG_KIND_XCP_ACK. H_rtt is fg_rate_t.rtt_us (0 = unknown). Network byte order.
 *
 *   cwnd_bytes  H_cwnd: the sender's congestion window, bytes
 *   feedback    H_feedback: signed (two's complement) bytes of window change.
 *               The sender puts its demand (FG_XCP_FEEDBACK_UNLIMITED = no
 *               limit); every switch min-stamps it (signed) on XCP data at
 *               the egress port; the receiver echoes it in its XCP ack;
 *               switches leave acks alone.
 *   lg_pos      signed Q8.8 log2(rtt_s^2 * s_bytes / cwnd_bytes), sender-computed
 *   lg_neg      signed Q8.8 log2(rtt_s * s_bytes), sender-computed
 *               (FG_XCP_LG_NONE in either: that term is 0)
 */
header fg_xcp_t {
    bit<32> cwnd_bytes;
    bit<32> feedback;
    bit<16> lg_pos;
    bit<16> lg_neg;
}

struct headers_t {
    ethernet_t     ethernet;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    tcp_t          tcp;
    tcp_opt_byte_t[FG_TCP_OPTION_BYTES] tcp_opts;
    udp_t          udp;
    fg_rate_t      fg;
    fg_rd_t        fg_rd;
    fg_xcp_t       fg_xcp;
}

struct metadata_t {
    /* FG_ANOMALY_* of this packet (the first decisive one), 0 when none. */
    bit<8>  anomaly;
    /* 1 once a control decided to drop the packet (later controls skip it). */
    bit<1>  dropped;
    /* 1 when the rate header is well formed and may be min-stamped. */
    bit<1>  fg_stampable;
    /* 1 once the rate header was rewritten (the UDP checksum is then updated, RateHeaderChecksum). */
    bit<1>  fg_rewritten;
    /* Sum of the rate header's rewritable 16-bit words as they arrived (L4Classify):
     * the UDP checksum is updated incrementally from it (RFC 1624, rate_feedback.p4). */
    bit<32> fg_csum_words;
    /* (port_feedback's parameters and the histogram buckets need no field:
     * their actions use them directly, docs/performance.md "Pipeline".) */
    /* SYN gating. */
    bit<2>  syn_color;
    /* TCP option parsing (SYNs only): bytes left in the options, bytes left
     * in the current option, and the window scale shift found (0 = none). */
    bit<8>  tcp_opt_left;
    bit<8>  tcp_opt_body;
    bit<8>  tcp_wscale;
    bit<1>  tcp_wscale_seen;
    /* FICCRD (ficcrd.p4). Ingress decisions handed to egress: */
    bit<1>  fc_source;          /* arrived on a source port: classify the TCP flow */
    bit<16> fc_rd_interval;     /* k: one RD every k packets of a flow (0 = none) */
    bit<1>  fc_edge;            /* leaves by an edge port: rewrite ACKs, consume RD */
    bit<32> fc_rtt_min_us;      /* lower bound of the RTT in ER x RTT */
    bit<9>  fc_edge_port;       /* the edge port (also for a turned-around RD) */
    bit<1>  fc_rd_valid;        /* a well-formed RD */
    bit<1>  fc_turned;          /* a forward RD turned around here */
    bit<1>  fc_consume;         /* a backward RD that ends here */
    bit<9>  fc_queue_port;      /* output queue whose MAPR/DPF an RD uses */
    bit<48> fc_prev_mac;        /* source MAC on arrival (turnaround) */
    /* Carried into the RD clone (egress to egress). */
    @field_list(FG_RD_FIELD_LIST)
    bit<32> fc_flow_key;
    @field_list(FG_RD_FIELD_LIST)
    bit<32> fc_apr_kbps;
    @field_list(FG_RD_FIELD_LIST)
    bit<32> fc_rtt_us;
    /* Core. */
    bit<16> fc_dpf;
    bit<1>  fc_above_q0;
    bit<32> fc_queue_depth;
    /* The index of the next counter update: every count (and the SYN meter)
     * takes it from here. An index computed in the call is a temporary p4c
     * makes per call site, one more field BMv2 resets per packet
     * (docs/performance.md "Pipeline"). xcp_ratio_buckets keys on it too. */
    bit<32> index;
    /* XCP (xcp.p4): bucket of log2(rtt/cwnd) chosen by xcp_ratio_buckets. */
    bit<8>  xcp_bucket;
}

#endif
