/* Rate feedback on data packets leaving a port (egress):
 *
 *   rate_kbps = min(rate_kbps, fair_rate_kbps[port])
 *   flags    |= FG_FLAG_CONGESTED   when the controller marked the port
 *
 * The controller writes one port_feedback entry per port (P4Runtime MODIFY).
 * A port without an entry, or with fair rate 0, stamps nothing, so a switch
 * the controller has not configured never stalls traffic. Acks, probes and
 * resource-discovery packets are never stamped. A compare and a copy: no
 * division, no per-flow state. */
#ifndef FG_RATE_FEEDBACK_P4
#define FG_RATE_FEEDBACK_P4

#include "headers.p4"

control RateFeedback(inout headers_t hdr,
                     inout metadata_t meta,
                     in standard_metadata_t standard_metadata) {
    /* The stamping is done in the action (straight-line selects, no
     * branches): on BMv2 a hidden table per branch cost more than the
     * compares, and every operator of an expression costs too
     * (docs/performance.md "Pipeline"). The rate header is marked rewritten
     * whether or not a word changed: RateHeaderChecksum's incremental update
     * leaves the checksum exactly as it was when no word changed, and that
     * costs less than working out whether one did. */
    @name(".set_port_feedback")
    action set_port_feedback(bit<32> fair_rate_kbps, bit<1> congested) {
        meta.fg_rewritten = 1;
        hdr.fg.rate_kbps = (fair_rate_kbps != 0 && hdr.fg.rate_kbps > fair_rate_kbps)
                           ? fair_rate_kbps : hdr.fg.rate_kbps;
        /* FG_FLAG_CONGESTED is bit 0 */
        hdr.fg.flags = hdr.fg.flags | (bit<8>)congested;
    }

    @name(".port_feedback")
    table port_feedback {
        key = {
            standard_metadata.egress_port : exact @name("egress_port");
        }
        actions = {
            set_port_feedback;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    apply {
        if (meta.fg_stampable == 1 && hdr.fg.kind == FG_KIND_DATA) {
            port_feedback.apply();
        }
    }
}

/* The UDP checksum of a datagram whose rate header a switch rewrote (rate
 * feedback, FICCRD turnaround and ER), updated incrementally (RFC 1624,
 * eqn. 3) from the sum of the rewritable words as they arrived
 * (meta.fg_csum_words, L4Classify) and as they leave:
 *
 *   HC' = ~(~HC + ~m + m')       m, m': version|kind, flags|reserved, rate_kbps
 *
 * (version and reserved never change, so m and m' sum just kind, flags << 8
 * and the two halves of rate_kbps; ~m over those 4 terms is 4 * 0xffff - m.)
 *
 * The update never reads the payload, so it is exact for the UDP length
 * whatever follows the datagram in the frame, and a checksum that arrived
 * wrong stays exactly as wrong (end to end). A result of 0 is sent as 0xFFFF
 * (RFC 768: 0 means "no checksum"); a datagram sent without a checksum (0)
 * keeps none. */
control RateHeaderChecksum(inout headers_t hdr, inout metadata_t meta) {
    /* The sum is built in meta.fg_csum_words (its last use) step by step:
     * with a local, p4c substitutes each statement into the next, and BMv2
     * evaluated the six-term sum four times over. In an action, so that the
     * zero test is a select (in the apply block p4c makes it a branch, with
     * a temporary and three hidden tables). */
    @hidden
    action fold_checksum() {
        meta.fg_csum_words = (bit<32>)(~hdr.udp.checksum) + (32w0x3fffc - meta.fg_csum_words)
                             + (hdr.fg.rate_kbps >> 16) + (hdr.fg.rate_kbps & 0xffff)
                             + ((bit<32>)hdr.fg.flags << 8) + (bit<32>)hdr.fg.kind;
        meta.fg_csum_words = (meta.fg_csum_words & 0xffff) + (meta.fg_csum_words >> 16);
        /* at most 0xffff + 7 now: one more carry at most */
        meta.fg_csum_words = meta.fg_csum_words + (meta.fg_csum_words >> 16);
        hdr.udp.checksum = ((bit<16>)meta.fg_csum_words == 0xffff)
                           ? 16w0xffff : ~((bit<16>)meta.fg_csum_words);
    }

    apply {
        if (meta.fg_rewritten == 1 && hdr.udp.checksum != 0) {
            fold_checksum();
        }
    }
}

#endif
