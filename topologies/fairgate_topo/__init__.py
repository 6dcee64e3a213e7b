"""FairGate Mininet topologies with BMv2 (simple_switch_grpc) switches."""
