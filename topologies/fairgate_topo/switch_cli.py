"""BMv2's Thrift CLI for the labs: the controller's module (one copy), re-exported."""

from fairgate_controller.thrift_cli import SwitchCliError, cli_path, run_switch_cli, set_queue

__all__ = ["SwitchCliError", "cli_path", "run_switch_cli", "set_queue"]
