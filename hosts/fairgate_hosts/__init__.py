"""FairGate host agents.

Sans-IO cores (no sockets, no clock reads) and thin agents around them:

- ``pacer``: absolute-deadline pacing.
- ``sender`` / ``receiver``: rate-header sender state machine and echoing receiver.
- ``udp_sender`` / ``udp_receiver``: the real agents (``python -m fairgate_hosts.sender``).
- ``cm``: the Congestion Manager (core, daemon, client).
- ``apps``: demo applications on the CM.
- ``traffic``: TCP flow generator (Poisson arrivals, Pareto sizes).

Units everywhere: rates in bytes/s inside the code, kbit/s on the wire; times in integer
microseconds of an arbitrary monotonic clock; wire times are those modulo 2**32.
"""
