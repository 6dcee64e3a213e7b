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
#define FG_KIND_MAX 6
/* flags byte */
#define FG_FLAG_CONGESTED 0x01
/* Rate field: kbit/s. All-ones asks for "as fast as the network allows". */
#define FG_RATE_UNLIMITED 0xffffffff

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
#define FG_ANOMALY_ENTRIES 32

#endif
