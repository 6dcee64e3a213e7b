/*
 * FairGate constants: the one place where numbers shared by the switch, the
 * controller, the host agents and the tests are defined.
 *
 * `make build` turns every `#define FG_*` / `ETHERTYPE_*` / `IP_PROTO_*` /
 * `TCP_FLAG_*` line below into Python (p4src/fairgate_p4/generated.py); a unit
 * test fails if the generated file is stale. Keep one define per line, value a
 * plain decimal or hex literal.
 */
#ifndef FG_DEFINES_P4
#define FG_DEFINES_P4

#define ETHERTYPE_IPV4 0x0800
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17

#define TCP_FLAG_FIN 0x01
#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_RST 0x04
#define TCP_FLAG_ACK 0x10

/* ---- Rate header (see headers.p4 and docs/rate-header.md) ---- */
/* UDP port that carries the rate header at the start of the UDP payload (either direction). */
#define FG_UDP_PORT 7471
#define FG_VERSION 1
/* Size of fg_rate_t in bytes (checked against the compiled P4 by a unit test). */
#define FG_HEADER_BYTES 28
#define FG_KIND_DATA 1
#define FG_KIND_ACK 2
#define FG_KIND_PROBE 3
#define FG_KIND_PROBE_ACK 4
#define FG_KIND_RD_FORWARD 5
#define FG_KIND_RD_BACKWARD 6
#define FG_KIND_XCP_DATA 7
#define FG_KIND_XCP_ACK 8
#define FG_KIND_MAX 8
/* flags byte */
#define FG_FLAG_CONGESTED 0x01
/* Data packets: the packet also carries a Congestion Manager probe, its number in `ack`
 * (a probe riding on data costs no packet of its own; the receiver answers it as a probe). */
#define FG_FLAG_PROBE 0x02
/* Rate field: kbit/s. All-ones asks for "as fast as the network allows". */
#define FG_RATE_UNLIMITED 0xffffffff

/* ---- Frames ---- */
/* Ethernet header bytes in front of the IPv4 header. */
#define FG_ETH_HEADER_BYTES 14
/* Shortest Ethernet frame without FCS: shorter payloads are padded up to it. */
#define FG_ETH_MIN_FRAME_BYTES 60

/* ---- Ports and counter geometry ---- */
/* Ports 0 .. FG_MAX_PORTS-1 are counted; packets to higher ports are forwarded but not counted. */
#define FG_MAX_PORTS 16
#define FG_PORT_BITS 4
/* Histograms (queue depth, carried RTT): FG_HIST_BUCKETS counters per port, index = port << FG_HIST_BUCKET_BITS | bucket. */
#define FG_HIST_BUCKETS 32
#define FG_HIST_BUCKET_BITS 5
#define FG_HIST_ENTRIES 512
/* Session events per port: index = port << FG_SESSION_EVENT_BITS | event. */
#define FG_SESSION_EVENT_BITS 3
#define FG_SESSION_ENTRIES 128
#define FG_EVENT_SYN_ADMITTED 0
#define FG_EVENT_SYN_DROPPED 1
#define FG_EVENT_SYN_UNGATED 2
#define FG_EVENT_FIN 3
#define FG_EVENT_RST 4
/* A SYN-ACK (a server accepted a handshake): counted on the reverse path of a gated port,
 * the flows actually admitted into the network (session control strategy 2). */
#define FG_EVENT_SYNACK 5
/* A FIN the switch's FIN filter has seen before (same flow, same sequence number): a
 * retransmitted copy. FG_EVENT_FIN counts first copies only; all copies are the two summed.
 * The filter (admission.p4, fin_filter) keeps the last FIN's sequence number per slot,
 * slot = CRC-32 of the flow's addresses and ports mod FG_FIN_FILTER_SLOTS. */
#define FG_EVENT_FIN_REPEAT 6
#define FG_FIN_FILTER_SLOTS 65536

/* ---- FICCRD (see ficcrd.p4 and docs/ficcrd.md) ---- */
/* Size of fg_rd_t, the RD extension that follows fg_rate_t on RD kinds. */
#define FG_RD_HEADER_BYTES 8
/* Per-flow state at the edge: FG_FICCRD_FLOWS slots, index = flow key & (FG_FICCRD_FLOWS - 1). */
#define FG_FICCRD_FLOWS 1024
#define FG_FICCRD_FLOW_MASK 0x3ff
/* Arrival rate (APR): per-packet exponential average with time constant K = 2^FG_FICCRD_APR_SHIFT us
 * (the paper's Eqn. 1 by shifts; docs/ficcrd.md "Arrival rate"). 2^18 us = 262 ms. */
#define FG_FICCRD_APR_SHIFT 18
/* DPF fixed point: unsigned Q6.10, FG_DPF_ONE = 1.0. */
#define FG_DPF_SHIFT 10
#define FG_DPF_ONE 1024
/* Receive-window floor after rewriting, bytes (two 1460-byte segments). */
#define FG_FICCRD_MIN_WINDOW 2920
/* Largest TCP window scale shift (RFC 7323). */
#define FG_TCP_MAX_WSCALE 14
/* TCP options parsed on SYNs: at most 40 bytes. */
#define FG_TCP_OPTION_BYTES 40
#define FG_TCP_OPTION_WSCALE 3
/* RD packets leave through clone session FG_RD_SESSION_BASE + egress port. */
#define FG_RD_SESSION_BASE 64
/* Clone field list (v1model @field_list) carried into the RD clone. */
#define FG_RD_FIELD_LIST 1
/* Event counters: index = port << FG_FICCRD_EVENT_BITS | event. */
#define FG_FICCRD_EVENT_BITS 3
#define FG_FICCRD_EVENT_ENTRIES 128
/* ficcrd_edge_events (port: the edge port, or the port an emitted RD leaves by) */
#define FG_EDGE_RD_EMITTED 0
#define FG_EDGE_RD_TURNED 1
#define FG_EDGE_RD_CONSUMED 2
#define FG_EDGE_RD_STALE 3
#define FG_EDGE_WINDOW_REWRITTEN 4
#define FG_EDGE_WSCALE_LEARNED 5
#define FG_EDGE_FLOW_STARTED 6
#define FG_EDGE_BASE_RTT_LEARNED 7
/* ficcrd_core_events (port: the output queue whose MAPR/DPF applied) */
#define FG_CORE_MAPR_UPDATED 0
#define FG_CORE_MAPR_HELD 1
#define FG_CORE_APR_UNKNOWN 2
#define FG_CORE_ER_LOWERED 3
#define FG_CORE_ER_KEPT 4
#define FG_CORE_MAPR_UNKNOWN 5

/* ---- XCP (see xcp.p4, docs/rate-header.md "XCP" and docs/data-plane.md "XCP") ---- */
/* Size of fg_xcp_t, the XCP congestion header that follows fg_rate_t on XCP kinds. */
#define FG_XCP_HEADER_BYTES 12
/* H_feedback a sender puts when it asks for no limit (largest positive int32). */
#define FG_XCP_FEEDBACK_UNLIMITED 0x7fffffff
/* Logarithms (lg_pos, lg_neg, lg_xi_p, lg_xi_n) are signed Q8.8 log2: FG_XCP_LG_ONE = 1.0. */
#define FG_XCP_LG_FRAC_BITS 8
#define FG_XCP_LG_ONE 256
/* The 16-bit pattern 0x8000 (-32768) in any of them means "no such term": that term is 0. */
#define FG_XCP_LG_NONE 0x8000
/* 2^(f/256) for the fraction f of an exponent: mantissa in Q1.15 (xcp_pow2.p4, generated). */
#define FG_XCP_MANTISSA_BITS 15
/* A term of 2^31 bytes or more saturates at FG_XCP_FEEDBACK_UNLIMITED. */
#define FG_XCP_SATURATE_EXP 31
/* Histogram of log2(rtt/cwnd) (xcp_ratio_hist, packets and bytes): FG_XCP_HIST_BUCKETS per
 * port, index = port << FG_XCP_HIST_BUCKET_BITS | bucket; the controller installs the
 * bucket bounds (xcp_ratio_buckets), the last bucket takes everything above them. */
#define FG_XCP_HIST_BUCKETS 64
#define FG_XCP_HIST_BUCKET_BITS 6
#define FG_XCP_HIST_ENTRIES 1024

/* ---- Meter colours (v1model) ---- */
#define FG_METER_GREEN 0
#define FG_METER_YELLOW 1
#define FG_METER_RED 2

/* ---- Input anomalies: index of the input_anomalies counter (one count per packet, the decisive reason). ---- */
#define FG_ANOMALY_NONE 0
/* dropped */
#define FG_ANOMALY_NOT_IPV4 1
#define FG_ANOMALY_IPV4_MALFORMED 2
#define FG_ANOMALY_IPV4_BAD_CHECKSUM 3
#define FG_ANOMALY_TTL_EXPIRED 4
#define FG_ANOMALY_NO_ROUTE 5
#define FG_ANOMALY_TCP_SYN_FIN 6
#define FG_ANOMALY_TCP_SYN_RST 7
/* forwarded, not stamped */
#define FG_ANOMALY_FG_TRUNCATED 8
#define FG_ANOMALY_FG_BAD_VERSION 9
#define FG_ANOMALY_FG_BAD_KIND 10
#define FG_ANOMALY_FG_RATE_ZERO 11
#define FG_ANOMALY_IPV4_FRAGMENT 12
#define FG_ANOMALY_L4_TRUNCATED 13
/* forwarded and processed normally; counted so that they are visible */
#define FG_ANOMALY_IPV4_OPTIONS 14
#define FG_ANOMALY_FG_RATE_UNLIMITED 15
#define FG_ANOMALY_PORT_NOT_COUNTED 16
/* forwarded unchanged, not processed: an RD kind without room for fg_rd_t (see ficcrd.p4) */
#define FG_ANOMALY_FG_RD_TRUNCATED 17
/* Length fields that disagree (docs/data-plane.md, "Malformed lengths"). Dropped: */
/* IPv4 ihl < 5 */
#define FG_ANOMALY_IPV4_BAD_IHL 18
/* IPv4 total length longer than the frame holds (RFC 1812 5.2.2) */
#define FG_ANOMALY_IPV4_LEN_OVER_FRAME 19
/* TCP data offset < 5, or past the end of the IPv4 payload */
#define FG_ANOMALY_TCP_BAD_OFFSET 20
/* Forwarded unchanged, never stamped: UDP length != IPv4 payload length (or < 8) */
#define FG_ANOMALY_UDP_BAD_LENGTH 21
/* Forwarded; bytes past the IPv4 total length are carried, never parsed, and a
 * rate header in such a frame is never stamped. Frames of at most
 * FG_ETH_MIN_FRAME_BYTES (Ethernet padding) are not counted. */
#define FG_ANOMALY_TRAILING_BYTES 22
/* Forwarded unchanged, never stamped: an XCP kind without room for fg_xcp_t in the UDP length (xcp.p4) */
#define FG_ANOMALY_FG_XCP_TRUNCATED 23
#define FG_ANOMALY_ENTRIES 32

#endif
