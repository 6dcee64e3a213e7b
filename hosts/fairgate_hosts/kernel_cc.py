"""fg_cm, TCP/CM's kernel congestion control: build, register and find it.

``bpf/fg_cm.bpf.c`` is a BPF struct_ops ``tcp_congestion_ops`` whose window stays at 2^30
segments whatever happens (losses, timeouts, recovery): with it the Congestion Manager's
grants are the only limit on what a TCP/CM socket sends, as the paper's TCP/CM replaces
TCP's congestion control by the CM. Building needs clang, bpftool and the kernel's BTF
(``/sys/kernel/btf/vmlinux``); registering needs root. A registered congestion control is
the whole machine's (every network namespace sees it) and stays until unregistered.

``python -m fairgate_hosts.kernel_cc register|unregister|status``
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

NAME = "fg_cm"
SOURCE = Path(__file__).resolve().parent / "bpf" / "fg_cm.bpf.c"
BTF = Path("/sys/kernel/btf/vmlinux")
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
DEFAULT = Path("/proc/sys/net/ipv4/tcp_congestion_control")


class KernelCCError(RuntimeError):
    """fg_cm cannot be built or registered here; the message says what is missing."""


def available() -> list[str]:
    try:
        return AVAILABLE.read_text().split()
    except OSError:
        return []


def current_default() -> str:
    try:
        return DEFAULT.read_text().strip()
    except OSError:
        return "unknown"


def registered() -> bool:
    return NAME in available()


def resolve_kernel_cc(choice: str) -> str | None:
    """``auto``: fg_cm when registered, else None (the host's default); else the name,
    which must be available."""
    if choice == "auto":
        return NAME if registered() else None
    if choice not in available():
        raise ValueError(
            f"kernel congestion control {choice!r} is not available here "
            f"({' '.join(available()) or 'none listed'}); fg_cm: python -m "
            "fairgate_hosts.kernel_cc register"
        )
    return choice


def missing_tools() -> str | None:
    """What building fg_cm lacks, in one line (None: nothing)."""
    for tool, pkg in (("clang", "clang"), ("bpftool", "bpftool")):
        if shutil.which(tool) is None:
            return f"{tool} not found: apt-get install {pkg} libbpf-dev (fg_cm, TCP/CM's kernel CC)"
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        return "bpf/bpf_helpers.h not found: apt-get install libbpf-dev"
    if not BTF.exists():
        return f"{BTF} not found: the kernel has no BTF, fg_cm cannot be built"
    return None


def build(out_dir: Path) -> Path:
    """Compile fg_cm into ``out_dir`` (vmlinux.h from the running kernel's BTF)."""
    why = missing_tools()
    if why:
        raise KernelCCError(why)
    out_dir.mkdir(parents=True, exist_ok=True)
    header = out_dir / "vmlinux.h"
    with open(header, "w") as fh:
        _run(["bpftool", "btf", "dump", "file", str(BTF), "format", "c"], stdout=fh)
    obj = out_dir / "fg_cm.bpf.o"
    _run(
        ["clang", "-O2", "-g", "-target", "bpf", f"-I{out_dir}", "-c", str(SOURCE), "-o", str(obj)]
    )
    return obj


def register(out_dir: Path) -> None:
    """Build and register fg_cm unless it is registered already."""
    if registered():
        return
    _run(["bpftool", "struct_ops", "register", str(build(out_dir))])
    if not registered():
        raise KernelCCError("bpftool registered fg_cm but the kernel does not list it")


def unregister() -> None:
    """Unregister fg_cm; the kernel's list is the judge. bpftool unregisters every
    struct_ops map of that name and exits non-zero when one of them cannot be unloaded:
    an earlier fg_cm that sockets still hold (TIME_WAIT) lingers after its own
    unregister. Its exit code alone once failed CI right after it printed "Unregistered
    tcp_congestion_ops fg_cm"."""
    if not registered():
        return
    try:
        _run(["bpftool", "struct_ops", "unregister", "name", NAME])
    except KernelCCError:
        if registered():
            raise


def _run(cmd: list[str], stdout: object = None) -> None:
    res = subprocess.run(
        cmd,
        stdout=stdout if stdout is not None else subprocess.PIPE,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        err = (res.stderr or "").strip().splitlines()
        raise KernelCCError(f"{' '.join(cmd[:3])}: {err[-1] if err else f'exit {res.returncode}'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fairgate_hosts.kernel_cc", description=__doc__)
    p.add_argument("action", choices=["register", "unregister", "status"])
    p.add_argument("--build-dir", type=Path, default=Path("/tmp/fairgate-fg_cm"))
    args = p.parse_args(argv)
    try:
        if args.action == "register":
            register(args.build_dir)
        elif args.action == "unregister":
            unregister()
    except KernelCCError as exc:
        print(f"kernel_cc: {exc}", file=sys.stderr)
        return 1
    print(f"{NAME}: {'registered' if registered() else 'not registered'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
