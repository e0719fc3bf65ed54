"""Time ``tensorconv check`` as it is in a git revision against the working tree, in one run.

    python bench/pools.py [--against REV] [--rounds 31] [--torch-rounds 9] [--corpora small,nn,torch]

Written to decide between two worker pools (``flake8_tensorconv/parallel.py``), but it
compares whatever differs between the two trees. The package as it is in REV (default:
HEAD) is exported next to the bench's scratch folder; both trees then run ``tensorconv
check --no-cache`` on the same files, with ``-jN`` (N: the cores this process may use)
and ``-j1``, each in its own process, in rounds. In a round the two trees' runs of one
command go one right after the other, and every other round in reverse order (the
pairing of ``bench/run.py``), so a shared machine's drift moves both alike. ``-j1`` does
not start a pool: its ratio is the control, what the bench reads when nothing differs.

Corpora: ``small`` (the first 10 files of the installed ``torch/nn/modules``, where
start-up is most of a run), ``nn`` (``torch/nn``) and ``torch`` (all of the package).
Printed per corpus: each command's median wall time with the range of its runs, then
REV / working tree as the median over rounds of the ratio within a round and its range,
and the median of the differences within a round in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import BENCH, ROOT, Bench, Spec, Timing, _installed_torch, paired  # noqa: E402

# Run the package of the tree named in argv[1], and check that it is that tree's.
CHECK = """
import sys
tree = sys.argv.pop(1)
sys.path.insert(0, tree)
import flake8_tensorconv
from flake8_tensorconv.cli import main
assert flake8_tensorconv.__file__.startswith(tree), f"bench: {flake8_tensorconv.__file__} is not under {tree}"
sys.exit(main(sys.argv[1:]))
"""
SMALL_FILES = 10


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="HEAD", metavar="REV", help="the git revision to compare with (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=31, help="rounds on small and nn (default 31)")
    parser.add_argument("--torch-rounds", type=int, default=9, help="rounds on all of torch (default 9)")
    parser.add_argument("--corpora", default="small,nn,torch", help="which of small, nn, torch (default: all three)")
    args = parser.parse_args(argv)
    corpora = [name.strip() for name in args.corpora.split(",") if name.strip()]
    unknown = set(corpora) - {"small", "nn", "torch"}
    if unknown or min(args.rounds, args.torch_rounds) < 1:
        parser.error(f"unknown corpus {sorted(unknown)}" if unknown else "rounds must be at least 1")

    torch_dir = _installed_torch()
    modules = sorted(str(path) for path in (torch_dir / "nn" / "modules").glob("*.py"))[:SMALL_FILES]
    targets = {"small": modules, "nn": [str(torch_dir / "nn")], "torch": [str(torch_dir)]}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "--verify", f"{args.against}^{{commit}}"], capture_output=True, text=True)
    if commit.returncode != 0:
        parser.error(f"--against {args.against}: not a commit of {ROOT}")
    before_label, after_label = args.against, "working tree"
    print(f"bench: {cores} cores, Python {sys.version.split()[0]}; {before_label} is {commit.stdout.strip()}")
    print(f"bench: load average before: {', '.join(f'{load:.1f}' for load in os.getloadavg())}", flush=True)

    BENCH.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BENCH, prefix="pools-") as scratch:
        before_tree = Path(scratch) / "before"
        before_tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.against, "flake8_tensorconv"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(before_tree)], input=archive.stdout, check=True)
        workdir = Path(scratch) / "work"
        workdir.mkdir()
        for corpus in corpora:
            rounds = args.torch_rounds if corpus == "torch" else args.rounds
            bench = Bench(rounds, workdir)
            command = {
                tree: [sys.executable, "-c", CHECK, str(path), "check", "--no-cache", "--exit-zero"]
                for tree, path in ((before_label, before_tree), (after_label, ROOT))
            }
            _same_output(bench, command, targets[corpus], cores)
            print(f"\n{corpus}: {' '.join(targets[corpus]) if corpus != 'small' else f'{len(modules)} files of torch/nn/modules'}")
            specs = [
                Spec(f"{tree} -j{jobs}", [*command[tree], f"-j{jobs}", *targets[corpus]])
                for jobs in (cores, 1)
                for tree in (before_label, after_label)
            ]
            timings = bench.rounds(specs)
            for jobs in (cores, 1):
                before, after = timings[f"{before_label} -j{jobs}"], timings[f"{after_label} -j{jobs}"]
                ratio, (low, high) = paired(before.walls, after.walls)
                print(
                    f"  -j{jobs}: {before_label} / {after_label} {ratio:.3f}x [{low:.3f}-{high:.3f}],"
                    f" {before_label} - {after_label} {_difference(before, after):+.1f} ms (median of {rounds} rounds)"
                    + ("  (control: no pool)" if jobs == 1 else "")
                )
    print(f"\nbench: load average after: {os.getloadavg()[0]:.1f}")
    return 0


def _same_output(bench: Bench, command: dict[str, list[str]], targets: list[str], cores: int) -> None:
    """Both trees report the same findings (else the times compare different work)."""
    outputs = {tree: bench.run([*argv, f"-j{cores}", *targets], capture=True)[2] for tree, argv in command.items()}
    first, second = outputs.values()
    if first != second:
        raise SystemExit(f"bench: the two trees report different findings on {' '.join(targets)}")


def _difference(before: Timing, after: Timing) -> float:
    return 1000 * statistics.median(a - b for a, b in zip(before.walls, after.walls, strict=True))


if __name__ == "__main__":
    sys.exit(main())
