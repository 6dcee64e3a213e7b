"""FairGate's P4 program as Python sees it.

Everything here derives from the P4 sources in ``p4src/``: ``generated`` is
written by ``gen`` from ``include/defines.p4`` and ``include/headers.p4``,
``artifacts`` locates the committed compiler outputs, ``header`` is the fast
rate-header codec used by the host agents, ``scapy_layer`` the Scapy layer
used by tests.
"""
