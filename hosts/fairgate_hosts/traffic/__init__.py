"""TCP flow workloads: Poisson arrivals and Pareto sizes (seeded)."""
