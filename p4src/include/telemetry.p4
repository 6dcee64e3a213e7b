/* Per-port telemetry, all of it readable over P4Runtime (counters only; PI
 * cannot read registers):
 *
 *   port_arrivals[port]    packets and bytes routed to `port` (ingress, after
 *                          every drop decision of ingress)
 *   port_departures[port]  packets and bytes leaving `port` (egress)
 *                          drops in the queue = arrivals - departures
 *   queue_depth_hist[port << 5 | b]
 *                          packets that found the egress queue of `port` in
 *                          depth bucket b (enq_qdepth, packets)
 *   rtt_hist[port << 5 | b]
 *                          data packets (rate or XCP) through `port` whose rate
 *                          header carried an RTT in bucket b (rtt_us, 0 = not counted)
 *
 * Bucket bounds are not baked into the switch: the controller installs them
 * as range entries in queue_buckets and rtt_buckets (a TCAM range table on
 * hardware) and turns the histograms back into mean and minimum per period.
 * Values above every installed range land in the last bucket
 * (FG_HIST_BUCKETS - 1). Only ports below FG_MAX_PORTS are counted. */
#ifndef FG_TELEMETRY_P4
#define FG_TELEMETRY_P4

#include "headers.p4"

control ArrivalTelemetry(inout metadata_t meta,
                         in standard_metadata_t standard_metadata) {
    @name(".port_arrivals")
    counter(FG_MAX_PORTS, CounterType.packets_and_bytes) port_arrivals;

    /* The index is set outside the action: computed in the call, p4c would
     * make a temporary per call site (a field BMv2 resets per packet). */
    @hidden action count_arrival() {
        port_arrivals.count(meta.index);
    }

    apply {
        meta.index = (bit<32>)standard_metadata.egress_spec;
        count_arrival();
    }
}

/* On BMv2 every table apply, including the hidden table p4c makes for the
 * statements between two conditions, costs per packet, and so does every
 * local and every temporary made for a computed extern argument (they are
 * metadata fields, reset per packet; docs/performance.md "Pipeline"). So the
 * counts live in the bucket tables' actions, which run on every lookup (hit
 * or default), with one plain index variable: a data packet applies two
 * tables here and nothing else. */
control DepartureTelemetry(in headers_t hdr,
                           inout metadata_t meta,
                           in standard_metadata_t standard_metadata) {
    @name(".port_departures")
    counter(FG_MAX_PORTS, CounterType.packets_and_bytes) port_departures;

    @name(".queue_depth_hist")
    counter(FG_HIST_ENTRIES, CounterType.packets) queue_depth_hist;

    @name(".rtt_hist")
    counter(FG_HIST_ENTRIES, CounterType.packets) rtt_hist;

    bit<32> index;  /* the egress port, then its histogram entry */

    /* Every packet: its departure, and its queue-depth bucket. */
    @name(".set_queue_bucket")
    action set_queue_bucket(bit<8> bucket) {
        index = (bit<32>)standard_metadata.egress_port;
        port_departures.count(index);
        index = (index << FG_HIST_BUCKET_BITS) | ((bit<32>)bucket & (FG_HIST_BUCKETS - 1));
        queue_depth_hist.count(index);
    }

    @name(".set_rtt_bucket")
    action set_rtt_bucket(bit<8> bucket) {
        index = ((bit<32>)standard_metadata.egress_port << FG_HIST_BUCKET_BITS)
                | ((bit<32>)bucket & (FG_HIST_BUCKETS - 1));
        rtt_hist.count(index);
    }

    @name(".queue_buckets")
    table queue_buckets {
        key = {
            standard_metadata.enq_qdepth : range @name("enq_qdepth");
        }
        actions = {
            set_queue_bucket;
        }
        const default_action = set_queue_bucket(FG_HIST_BUCKETS - 1);
        size = FG_HIST_BUCKETS;
    }

    @name(".rtt_buckets")
    table rtt_buckets {
        key = {
            hdr.fg.rtt_us : range @name("rtt_us");
        }
        actions = {
            set_rtt_bucket;
        }
        const default_action = set_rtt_bucket(FG_HIST_BUCKETS - 1);
        size = FG_HIST_BUCKETS;
    }

    apply {
        queue_buckets.apply();
        if (meta.fg_stampable == 1 && hdr.fg.rtt_us != 0
            && (hdr.fg.kind == FG_KIND_DATA || hdr.fg.kind == FG_KIND_XCP_DATA)) {
            rtt_buckets.apply();
        }
    }
}

#endif
