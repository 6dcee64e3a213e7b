"""Where the simulator's time goes (issue 17): py-spy samples of one bench_sim case,
each sample given to its innermost project frame (a Python function of the project, or a
C function mypyc compiled from one), summed by part.

    scripts/profile_sim.py [--case parking-lot-paper] [--seconds 2] [--ext]
                           [--svg docs/img/x.svg] [--raw samples.txt]
    scripts/profile_sim.py --instructions [--case ...] [--seconds 1] [--ext]

``--ext`` profiles the mypyc build (scripts/sim_ext.py; py-spy ``--native`` so that
compiled functions have names), else pure Python. ``--svg`` also records a flame graph
(a second run of the case). Prints the share of each part and the top functions.
Needs py-spy (requirements.txt).

``--instructions`` counts the instructions of the whole case's process instead
(valgrind's cachegrind, no cache simulation): a figure the machine's other load does not
change, to compare two versions of the code (about 50 times slower than a plain run)."""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOP / "scripts"))
import sim_ext  # noqa: E402

#: the parts a sample is given to, by the module of its innermost project frame
PARTS = {
    "host cores (fairgate_hosts)": ("sender", "receiver", "rtt", "pacer", "wire", "cm"),
    "header codec (fairgate_p4.header)": ("header", "xcp_math"),
    "event loop (fairgate_sim.engine)": ("engine",),
    "packet path (port, switch, network, udp, packet)": (
        "port",
        "switch",
        "network",
        "udp",
        "packet",
        "meter",
        "ficcrd",
        "probe",
        "control",
    ),
    "controller (fairgate_controller)": ("fairgate_controller",),
    "experiment driver, imports (fairgate_exp, importlib)": ("fairgate_exp", "importlib"),
}
_C_FRAME = re.compile(r"CPy(?:Def|Py)_(\w+?)___(\w+)")
_PY_FRAME = re.compile(r"^(.*) \((?:.*/)?((?:fairgate_\w+)/[\w/]+\.py):\d+\)$")


def innermost(stack: list[str]) -> tuple[str, str]:
    """(module key, function) of the innermost project frame of one stack."""
    for frame in reversed(stack):
        m = _C_FRAME.match(frame)
        if m:
            return m.group(1), f"{m.group(1)}.{m.group(2)} [C]"
        m = _PY_FRAME.match(frame)
        if m:
            path = m.group(2)
            pkg, mod = path.split("/")[0], Path(path).stem
            key = mod if pkg in ("fairgate_sim", "fairgate_hosts", "fairgate_p4") else pkg
            if pkg == "fairgate_hosts" and "/cm/" in path:
                key = "cm"
            return key, f"{path.removesuffix('.py').replace('/', '.')}.{m.group(1)}"
        if "importlib" in frame:
            return "importlib", "import"
    return "other", "other"


def part_of(key: str) -> str:
    for part, keys in PARTS.items():
        if key in keys:
            return part
    return "other (interpreter, libraries)"


def breakdown(raw: Path, top: int = 25) -> str:
    """The report of py-spy's raw (collapsed stacks) output."""
    parts: collections.Counter[str] = collections.Counter()
    funcs: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _sep, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        key, func = innermost(stack.split(";"))
        parts[part_of(key)] += n
        funcs[func] += n
    if not total:
        raise SystemExit(f"profile_sim: no samples in {raw}")
    out = [f"{total} samples", "", "| part | share |", "|---|---|"]
    out += [f"| {p} | {n / total:.0%} |" for p, n in parts.most_common()]
    out += ["", f"top {top} functions (own samples, innermost project frame):"]
    out += [f"  {n / total:6.1%}  {f}" for f, n in funcs.most_common(top)]
    return "\n".join(out)


def record(fmt: str, out: Path, case: str, seconds: float, ext: bool, rate: int) -> None:
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(pyspy).exists():
        raise SystemExit("profile_sim: needs py-spy (pip install -r requirements.txt)")
    bench = [sys.executable, str(TOP / "benchmarks" / "bench_sim.py"), "--case", case]
    bench += ["--seconds", str(seconds), "--pl-seconds", str(seconds)]
    cmd = [pyspy, "record", "-r", str(rate), "-f", fmt, "-o", str(out)]
    cmd += ["--native"] if ext else []
    subprocess.run([*cmd, "--", *bench], check=True, env=_env(ext), capture_output=True)


def instructions(case: str, seconds: float, ext: bool) -> int:
    """Instructions executed by the case's process (valgrind --tool=cachegrind)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("profile_sim --instructions: needs valgrind (apt install valgrind)")
    bench = [sys.executable, str(TOP / "benchmarks" / "bench_sim.py"), "--case", case]
    bench += ["--seconds", str(seconds), "--pl-seconds", str(seconds)]
    cmd = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    env = _env(ext)
    done = subprocess.run([*cmd, *bench], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:]
        raise SystemExit(f"profile_sim --instructions: the case failed: {' '.join(tail)}")
    m = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if m is None:
        raise SystemExit("profile_sim --instructions: no count in valgrind's output")
    return int(m.group(1).replace(",", ""))


def _env(ext: bool) -> dict[str, str] | None:
    if not ext:
        return None
    why = sim_ext.missing_compiler()
    if why:
        raise SystemExit(f"profile_sim --ext: {why}")
    if sim_ext.stale():
        sim_ext.build()
    return sim_ext.environ()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--case", default="parking-lot-paper", help="a bench_sim case")
    p.add_argument("--seconds", type=float, default=2.0, help="simulated seconds")
    p.add_argument("--ext", action="store_true", help="the mypyc build (else pure Python)")
    p.add_argument("--rate", type=int, default=100, help="samples per second")
    p.add_argument("--svg", type=Path, help="also write a flame graph here")
    p.add_argument("--raw", type=Path, help="keep the raw samples here")
    p.add_argument("--instructions", action="store_true", help="count instructions (valgrind)")
    args = p.parse_args(argv)
    build = "mypyc" if args.ext else "pure Python"
    if args.instructions:
        n = instructions(args.case, args.seconds, args.ext)
        print(f"{args.case}, {args.seconds:g} simulated s, {build}: {n:,} instructions")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        raw = args.raw or Path(tmp) / "samples.txt"
        record("raw", raw, args.case, args.seconds, args.ext, args.rate)
        print(
            f"{args.case}, {args.seconds:g} simulated s, {'mypyc' if args.ext else 'pure Python'}"
        )
        print(breakdown(raw))
    if args.svg:
        record("flamegraph", args.svg, args.case, args.seconds, args.ext, args.rate)
        print(f"wrote {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
