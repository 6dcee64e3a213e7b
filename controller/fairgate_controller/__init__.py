"""FairGate P4Runtime controller."""
