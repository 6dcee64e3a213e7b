/* XCP on TNA: the counterpart of XcpFeedback in ../include/xcp.p4, with the
 * same control-plane names (xcp_factors / set_xcp_factors, xcp_ratio_buckets /
 * set_xcp_bucket, xcp_ratio_hist). v1model raises 2 to e = lg + lg_xi with a
 * mantissa table and a shift by e's integer part; a Tofino action can neither
 * shift by a runtime amount nor sign-extend nor widen a header field, so
 * (fairgate_p4/tna_xcp.py is the bit-exact model, docs/hardware.md "XCP per
 * packet" the design):
 *  - lg is widened by an identity hash and biased by flipping its sign bit;
 *    lg_xi comes zero-extended from the action data: e' = (lg ^ 0x8000) +
 *    lg_xi = e + 2^15 + 2^16 x (sign bit of lg_xi);
 *  - 2^(e/256) is one exact-match table on (sign of lg_xi, e')
 *    (xcp_pow2_tables.p4, generated; the control plane installs the entries
 *    fairgate_p4.tna_xcp.table_entries gives: the values of
 *    xcp_math.pow2_term, identical to v1model's), 0 below it,
 *    FG_XCP_FEEDBACK_UNLIMITED from e' = 256 x FG_TNA_XCP_SAT_HI_<sign> up;
 *  - the signed min(H_feedback, pos - neg) is an unsigned compare of the two
 *    values biased by 2^31: a saturating subtract, non-zero when fb is lower.
 * The UDP checksum is fixed by the deparser (parser residual), as for the
 * rate header. Arithmetic runs for every packet; the header write and the
 * histogram count wait for an XCP data packet with a known RTT. */
#ifndef FG_TNA_XCP_P4
#define FG_TNA_XCP_P4

#include "types.p4"

control XcpFeedback(inout tna_headers_t hdr,
                    inout tna_egress_meta_t meta,
                    in egress_intrinsic_metadata_t eg_intr_md) {
    bit<1>  xcp_data = 0;
    bit<32> pos_w;       /* lg_pos, zero-extended */
    bit<32> neg_w;
    bit<32> pos_b;       /* lg_pos ^ 0x8000 = lg_pos + 2^15 */
    bit<32> neg_b;
    bit<32> e_pos;       /* lg_pos + lg_xi_p + 2^15 + 2^16 (lg_xi_p < 0) */
    bit<32> e_neg;
    bit<32> ratio_hi;
    bit<32> ratio_key;   /* lg_pos - lg_neg + 2^16 */
    bit<32> pos_term;    /* 2^31 + the positive term */
    bit<32> neg_term;
    bit<32> fb_b;        /* 2^31 + pos - neg */
    bit<32> old_b;       /* 2^31 + H_feedback (signed) */
    bit<32> excess;
    bit<32> fb;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) widen_pos;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) widen_neg;

    @name(".xcp_ratio_hist")
    Counter<bit<64>, bit<10>>(FG_XCP_HIST_ENTRIES, CounterType_t.PACKETS_AND_BYTES) xcp_ratio_hist;

    @name(".set_xcp_factors")
    action set_xcp_factors(bit<16> lg_xi_p, bit<16> lg_xi_n) {
        meta.xcp_xi_p = (bit<32>)lg_xi_p;
        meta.xcp_xi_n = (bit<32>)lg_xi_n;
        meta.xcp_factors_hit = 1;
    }

    @name(".xcp_factors")
    table xcp_factors {
        key = {
            eg_intr_md.egress_port : exact @name("egress_port");
        }
        actions = {
            set_xcp_factors;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = FG_MAX_PORTS;
    }

    @name(".set_xcp_bucket")
    action set_xcp_bucket(bit<8> bucket) {
        meta.xcp_bucket = bucket;
    }

    /* A Tofino range match takes at most 5 nibbles: the key is the low 20
     * bits of lg_pos - lg_neg + 2^16 (always < 2^17; v1model: bit<32>). */
    @name(".xcp_ratio_buckets")
    table xcp_ratio_buckets {
        key = {
            ratio_key[19:0] : range @name("ratio_key");
        }
        actions = {
            set_xcp_bucket;
        }
        const default_action = set_xcp_bucket(FG_XCP_HIST_BUCKETS - 1);
        size = FG_XCP_HIST_BUCKETS;
    }

    @name(".set_pos_pow2")
    action set_pos_pow2(bit<32> term) { pos_term = term; }
    @name(".set_neg_pow2")
    action set_neg_pow2(bit<32> term) { neg_term = term; }

#include "xcp_pow2_tables.p4"

    /* Dependent steps, one action per MAU stage. */
    /* (one hash result of 32 bits per action: the immediate path is 32 bits) */
    @hidden
    action widen_lg_pos() {
        pos_w = widen_pos.get({16w0, hdr.fg_xcp.lg_pos});
    }
    @hidden
    action widen_lg_neg() {
        neg_w = widen_neg.get({16w0, hdr.fg_xcp.lg_neg});
    }
    @hidden
    action bias_terms() {
        pos_b = pos_w ^ 32w0x8000;
        neg_b = neg_w ^ 32w0x8000;
        old_b = hdr.fg_xcp.feedback ^ 32w0x80000000;
    }
    @hidden
    action sum_exponents() {
        e_pos = pos_b + meta.xcp_xi_p;
        e_neg = neg_b + meta.xcp_xi_n;
        ratio_hi = pos_b + 32w0x10000;
    }
    @hidden
    action ratio_difference() {
        ratio_key = ratio_hi - neg_b;
    }
    @hidden
    action pos_zero() { pos_term = 32w0x80000000; }
    @hidden
    action pos_saturate() { pos_term = 32w0x80000000 + FG_XCP_FEEDBACK_UNLIMITED; }
    @hidden
    action neg_zero() { neg_term = 0; }
    @hidden
    action neg_saturate() { neg_term = FG_XCP_FEEDBACK_UNLIMITED; }
    @hidden
    action difference() {
        fb_b = pos_term - neg_term;
    }
    @hidden
    action compare() {
        excess = old_b |-| fb_b;
        fb = fb_b ^ 32w0x80000000;
    }
    /* The deparser fixes the UDP checksum (v1model: RFC 1624 in the action). */
    @hidden
    action lower_feedback() {
        hdr.fg_xcp.feedback = fb;
        meta.udp_csum_update = meta.udp_has_csum;
    }

    apply {
        if (hdr.fg_xcp.isValid() && meta.bridge.fg_stampable == 1
            && hdr.fg.kind == FG_KIND_XCP_DATA) {
            if (hdr.fg.rtt_us != 0 && eg_intr_md.egress_port < FG_MAX_PORTS) {
                xcp_data = 1;
            }
        }
        xcp_factors.apply();
        widen_lg_pos();
        widen_lg_neg();
        bias_terms();
        sum_exponents();
        ratio_difference();
        if (hdr.fg_xcp.lg_pos == FG_XCP_LG_NONE || meta.xcp_xi_p == FG_XCP_LG_NONE) {
            pos_zero();
        } else if (meta.xcp_xi_p[15:15] == 0 && e_pos[16:8] >= FG_TNA_XCP_SAT_HI_0) {
            pos_saturate();
        } else if (e_pos[16:8] >= FG_TNA_XCP_SAT_HI_1) {
            pos_saturate();
        } else {
            xcp_pos_pow2.apply();
        }
        if (hdr.fg_xcp.lg_neg == FG_XCP_LG_NONE || meta.xcp_xi_n == FG_XCP_LG_NONE) {
            neg_zero();
        } else if (meta.xcp_xi_n[15:15] == 0 && e_neg[16:8] >= FG_TNA_XCP_SAT_HI_0) {
            neg_saturate();
        } else if (e_neg[16:8] >= FG_TNA_XCP_SAT_HI_1) {
            neg_saturate();
        } else {
            xcp_neg_pow2.apply();
        }
        difference();
        compare();
        if (xcp_data == 1) {
            if (hdr.fg_xcp.lg_pos != FG_XCP_LG_NONE && hdr.fg_xcp.lg_neg != FG_XCP_LG_NONE) {
                xcp_ratio_buckets.apply();
                xcp_ratio_hist.count(eg_intr_md.egress_port[3:0] ++ meta.xcp_bucket[5:0]);
            }
            if (meta.xcp_factors_hit == 1 && excess != 0) {
                lower_feedback();
            }
        }
    }
}

#endif
