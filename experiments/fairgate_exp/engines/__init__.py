"""Engine implementations: ``sim`` (fairgate_sim) and ``bmv2`` (fairgate_topo); neither
imports the other."""
