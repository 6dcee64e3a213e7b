/* A TCP flow's 5-tuple as a header, for hashing: a header's fields are hashed in
 * place and only its validity bit is reset per packet on BMv2, where a list of
 * fields costs a temporary each (docs/performance.md "Pipeline"). FiccrdEgress
 * hashes it into the flow key, SynAdmission into the FIN filter's slot. */
#ifndef FG_FLOW_TUPLE_P4
#define FG_FLOW_TUPLE_P4

header flow_tuple_t {
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<16> src_port;
    bit<16> dst_port;
}

#endif
