// SPDX-License-Identifier: GPL-2.0
/* fg_cm: the kernel congestion control of TCP/CM (fairgate_hosts.apps.tcpcm).
 *
 * In the Congestion Manager paper's TCP/CM, TCP's own congestion control is replaced by
 * the CM: every segment leaves when the CM grants it. Linux cannot switch congestion
 * control off, so this struct_ops congestion control keeps the window out of the way:
 * the congestion window stays at FG_CM_CWND segments (far above any window the CM
 * grants), a loss leaves ssthresh there, and cong_control (which replaces proportional
 * rate reduction and Reno's increase) puts the window back on every ack, also after a
 * retransmission timeout set it to one segment. No pacing is requested. Loss recovery and
 * retransmission stay TCP's. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

#define FG_CM_CWND (1U << 30)

static __always_inline struct tcp_sock *fg_tcp_sk(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

SEC("struct_ops/fg_cm_init")
void BPF_PROG(fg_cm_init, struct sock *sk)
{
	struct tcp_sock *tp = fg_tcp_sk(sk);

	tp->snd_cwnd = FG_CM_CWND;
	tp->snd_ssthresh = FG_CM_CWND;
}

SEC("struct_ops/fg_cm_ssthresh")
__u32 BPF_PROG(fg_cm_ssthresh, struct sock *sk)
{
	return FG_CM_CWND;
}

SEC("struct_ops/fg_cm_cong_avoid")
void BPF_PROG(fg_cm_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	fg_tcp_sk(sk)->snd_cwnd = FG_CM_CWND;
}

SEC("struct_ops/fg_cm_cong_control")
void BPF_PROG(fg_cm_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	fg_tcp_sk(sk)->snd_cwnd = FG_CM_CWND;
}

SEC("struct_ops/fg_cm_undo_cwnd")
__u32 BPF_PROG(fg_cm_undo_cwnd, struct sock *sk)
{
	return FG_CM_CWND;
}

SEC(".struct_ops")
struct tcp_congestion_ops fg_cm = {
	.init = (void *)fg_cm_init,
	.ssthresh = (void *)fg_cm_ssthresh,
	.cong_avoid = (void *)fg_cm_cong_avoid,
	.cong_control = (void *)fg_cm_cong_control,
	.undo_cwnd = (void *)fg_cm_undo_cwnd,
	.name = "fg_cm",
};
