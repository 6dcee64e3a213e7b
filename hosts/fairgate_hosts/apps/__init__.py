"""Demo applications on the Congestion Manager (layered audio, TCP over CM)."""
