"""FairGate experiments as data: one TOML file, validated, run by either engine."""
