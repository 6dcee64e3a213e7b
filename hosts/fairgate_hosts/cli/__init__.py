"""Host commands for the interactive lab (``make run``): fg-send, fg-recv, fg-tcp, fg-cm,
fg-status. Each is a thin front end over the agents the experiments run (``sender``,
``receiver``, ``traffic``, ``apps``): it parses friendly arguments (host names, ``20M``,
``poisson:50/s``), prints a line a second to the terminal and writes the agent's own log
into the run folder (``$FG_RUN_DIR/cmds/``)."""
