"""Lab networks as data (JSON), for the simulator runs that need a BMv2 lab's exact
network (port numbers, queue rates) without importing the lab (``fairgate_topo``)."""
