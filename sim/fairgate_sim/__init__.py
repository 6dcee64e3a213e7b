"""Packet-level discrete-event simulator of FairGate (issue #8).

Drives the controller's algorithms (through ``SwitchAgent.compute``) and the hosts'
sans-IO cores unchanged; the switch model applies the per-packet rules of ``p4src``.
See docs/simulator.md.
"""
