"""The simulator's optional compiled build (issue 17): the packet path and the host cores
compiled with mypyc from their unchanged sources, in a copy of their packages under
``build/sim-ext/``, never beside the sources (so an edited ``.py`` is never shadowed by an
old ``.so``).

    scripts/sim_ext.py build              # compile (mypyc, a C compiler, Python headers)
    scripts/sim_ext.py run -- CMD ...     # run CMD with the compiled packages first on the path
    scripts/sim_ext.py check              # exit 0 if the build is there and up to date

``run`` refuses a build older than its sources (each copied file's SHA-256 is recorded). The
pure-Python code stays the default and the reference: a compiled run gives the same results
on the same seed (tests/unit/sim/test_sim_ext.py runs the same-seed digests under it)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
OUT = TOP / "build" / "sim-ext"
#: (source root, package) copied into the build; the others come from the tree
PACKAGES = (("p4src", "fairgate_p4"), ("hosts", "fairgate_hosts"), ("sim", "fairgate_sim"))
#: the modules compiled: the packet path (port, switch), the rate-header codec and the
#: host cores (the event loop, engine.py, stays Python: its clock starts at SimPy's int 0)
COMPILED = (
    "sim/fairgate_sim/engine.py",
    "sim/fairgate_sim/port.py",
    "sim/fairgate_sim/network.py",
    "sim/fairgate_sim/switch.py",
    "sim/fairgate_sim/udp.py",
    "sim/fairgate_sim/packet.py",
    "p4src/fairgate_p4/header.py",
    "hosts/fairgate_hosts/sender.py",
    "hosts/fairgate_hosts/receiver.py",
    "hosts/fairgate_hosts/rtt.py",
    "hosts/fairgate_hosts/pacer.py",
    "hosts/fairgate_hosts/wire.py",
)
#: mypy options: the sources are type-checked as they are (one hosts argument is
#: ``int | None`` where ``int`` is declared; mypyc checks it at run time instead)
MYPY_OPTIONS = (
    "--ignore-missing-imports",
    "--follow-imports=silent",
    "--disable-error-code",
    "arg-type",
)
ROOTS = ("p4src", "controller", "hosts", "topologies", "sim")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sources(base: Path) -> dict[str, str]:
    out = {}
    for root, pkg in PACKAGES:
        for f in sorted((base / root / pkg).rglob("*.py")):
            out[str(f.relative_to(base))] = _digest(f)
    return out


def missing_compiler() -> str | None:
    """Why the build cannot run here (the tool first), or None."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        return "needs a C compiler (apt install gcc)"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "needs the Python headers (apt install python3-dev)"
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "needs mypyc (make deps: mypy is pinned in requirements.txt)"
    return None


def build(out: Path = OUT) -> Path:
    """Copy the packages to ``out`` and compile ``COMPILED`` there; returns ``out``."""
    why = missing_compiler()
    if why:
        raise SystemExit(f"sim_ext build: {why}")
    if out.exists():
        shutil.rmtree(out)
    for root, pkg in PACKAGES:
        shutil.copytree(
            TOP / root / pkg, out / root / pkg, ignore=shutil.ignore_patterns("__pycache__")
        )
    work = out / "_build"
    script = (
        "import sys\n"
        "from setuptools import setup\n"
        "from mypyc.build import mypycify\n"
        "paths = sys.argv[1:]\n"
        "setup(name='fairgate_sim_ext', ext_modules=mypycify(paths, group_name='fairgate_sim_ext'),"
        f" script_args=['build_ext', '--build-lib', {str(work / 'lib')!r},"
        f" '--build-temp', {str(work / 'tmp')!r}])\n"
    )
    env = dict(os.environ, MYPYPATH=_path(out))
    cmd = [sys.executable, "-c", script, *MYPY_OPTIONS, *COMPILED]
    done = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
        raise SystemExit("sim_ext build: mypyc failed:\n" + "\n".join(tail))
    lib = work / "lib"
    for root, pkg in PACKAGES:
        for so in (lib / pkg).glob("*.so"):
            shutil.copy2(so, out / root / pkg / so.name)
    for so in lib.glob("*.so"):  # the group's shared runtime: a top-level module
        shutil.copy2(so, out / "sim" / so.name)
    shutil.rmtree(work)
    (out / "manifest.json").write_text(json.dumps(_sources(out), indent=1) + "\n")
    return out


def stale(out: Path = OUT) -> str | None:
    """Why the build at ``out`` cannot be used (absent or older than its sources), or None."""
    manifest = out / "manifest.json"
    if not manifest.exists():
        return f"no compiled build in {out} (scripts/sim_ext.py build)"
    if json.loads(manifest.read_text()) != _sources(TOP):
        return f"the compiled build in {out} is older than its sources (scripts/sim_ext.py build)"
    return None


def environ(out: Path = OUT) -> dict[str, str]:
    """The environment that puts the compiled packages first (the rest from the tree)."""
    old = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=_path(out) + (os.pathsep + old if old else ""))


def _path(out: Path) -> str:
    """Import roots: the copied packages from ``out``, the others from the tree."""
    copied = {root for root, _pkg in PACKAGES}
    return os.pathsep.join(str(out / r) if r in copied else str(TOP / r) for r in ROOTS)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("action", choices=("build", "run", "check"))
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="run: the command (after --)")
    args = p.parse_args(argv)
    if args.action == "build":
        print(f"compiled {len(COMPILED)} modules into {build()}")
        return 0
    why = stale()
    if args.action == "check":
        print(why or f"{OUT}: up to date")
        return 1 if why else 0
    if why:
        print(f"sim_ext run: {why}", file=sys.stderr)
        return 2
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        print("sim_ext run: give a command after --", file=sys.stderr)
        return 2
    return subprocess.call(cmd, env=environ())


if __name__ == "__main__":
    sys.exit(main())
