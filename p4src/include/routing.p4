/* IPv4 forwarding: longest-prefix match to a next hop (egress port and MAC
 * rewrite) and TTL decrement; a miss drops and counts FG_ANOMALY_NO_ROUTE.
 * The IPv4 checksum is recomputed in FgComputeChecksum. */
#ifndef FG_ROUTING_P4
#define FG_ROUTING_P4

#include "headers.p4"

control Ipv4Routing(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    @name(".forward")
    action forward(port_id_t port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    @name(".drop_no_route")
    action drop_no_route() {
        mark_to_drop(standard_metadata);
        meta.dropped = 1;
        meta.anomaly = FG_ANOMALY_NO_ROUTE;
    }

    @name(".ipv4_routes")
    table ipv4_routes {
        key = {
            hdr.ipv4.dst_addr : lpm @name("dst_addr");
        }
        actions = {
            forward;
            drop_no_route;
        }
        default_action = drop_no_route();
        size = 1024;
    }

    apply {
        ipv4_routes.apply();
    }
}

#endif
