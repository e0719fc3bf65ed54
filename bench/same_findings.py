"""Check that a speed change changed no finding: the working tree against a git revision.

    python bench/same_findings.py [--against REV | --unfiltered] [PATH ...]

Lints every file under PATH (default: the installed torch package and, when it has
been fetched, the dev corpus in .bench/corpus) with the default rules and with every
rule, once with the package as it is in REV (default: HEAD) and once with the working
tree, each in its own processes, and compares every finding, fix included. Exits 1 and
prints the first differences if there are any.

``--unfiltered`` compares the working tree with itself run without its shortcuts: every
file parsed (no prefilter) and every function walked. It checks that the trigger tokens
never drop a finding. Files that cannot be parsed are left out of that comparison.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / ".bench"

# Run inside the tree under test: one JSON line per finding, sorted.
LINT = """
import json, os, sys
from multiprocessing import get_context
from flake8_tensorconv import engine
from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source

UNFILTERED = os.environ.get("SAME_FINDINGS_UNFILTERED") == "1"
if UNFILTERED:
    engine._scopes_to_walk = lambda *args: None
from flake8_tensorconv.files import discover
from flake8_tensorconv.source import read_source
import inspect

# A tree whose engine may read the file's package (a would-be finding's question) is given the path, as the CLI does.
ON_DISK = {"path": None} if "path" in inspect.signature(lint_source).parameters else {}

def lint(path):
    rows = []
    for label, settings in (("default", Settings()), ("all", Settings(select=("ALL",)))):
        try:
            findings = lint_source(read_source(path), settings, prefiltered=UNFILTERED, **{key: path for key in ON_DISK})
        except Exception as error:
            if not UNFILTERED:
                rows.append(json.dumps([label, path, "error", type(error).__name__, str(error)]))
            continue
        for f in findings:
            edits = f.fix and [[e.start.line, e.start.column, e.end.line, e.end.column, e.content] for e in f.fix.edits]
            fix = f.fix and [f.fix.applicability.value, f.fix.message, edits]
            rows.append(json.dumps([label, path, f.code, f.message, f.start.line, f.start.column, f.end.line, f.end.column, fix]))
    return rows

files = discover(sys.argv[2:]).files
if sys.platform.startswith("linux"):
    with get_context("fork").Pool() as pool:
        rows = sorted(row for rows in pool.imap_unordered(lint, files, chunksize=8) for row in rows)
else:
    rows = sorted(row for path in files for row in lint(path))
with open(sys.argv[1], "w", encoding="utf-8") as handle:
    handle.write("".join(row + "\\n" for row in rows))
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="HEAD", metavar="REV", help="the git revision to compare with (default: HEAD)")
    parser.add_argument("--unfiltered", action="store_true", help="compare with the working tree run without prefilter and pruned walk")
    parser.add_argument("paths", nargs="*", metavar="PATH")
    args = parser.parse_args(argv)
    paths = [os.path.abspath(path) for path in args.paths] or _default_paths()
    BENCH.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BENCH, prefix="same-findings-") as scratch:
        before_tree = ROOT
        if not args.unfiltered:
            before_tree = Path(scratch) / "before"
            before_tree.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.against, "flake8_tensorconv"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(before_tree)], input=archive.stdout, check=True)
        before, after = Path(scratch) / "before.jsonl", Path(scratch) / "after.jsonl"
        for tree, output, unfiltered in ((before_tree, before, args.unfiltered), (ROOT, after, False)):
            environment = {**os.environ, "PYTHONPATH": str(tree), "SAME_FINDINGS_UNFILTERED": "1" if unfiltered else "0"}
            subprocess.run([sys.executable, "-c", LINT, str(output), *paths], env=environment, check=True, cwd=scratch)
        old, new = before.read_text(encoding="utf-8").splitlines(), after.read_text(encoding="utf-8").splitlines()
        if args.unfiltered:
            new = [row for row in new if '"error"' not in row.split(",", 3)[2]]
            args.against = "unfiltered"
    print(f"{args.against}: {len(old)} findings; working tree: {len(new)} findings (default rules and all rules, on {', '.join(paths)})")
    if old == new:
        print("same findings")
        return 0
    only_old, only_new = sorted(set(old) - set(new)), sorted(set(new) - set(old))
    for label, rows in ((f"only in {args.against}", only_old), ("only in the working tree", only_new)):
        for row in rows[:20]:
            print(f"  {label}: {row}")
    return 1


def _default_paths() -> list[str]:
    spec = importlib.util.find_spec("torch")  # the package's folder, without importing torch
    paths = [next(iter(spec.submodule_search_locations))] if spec and spec.submodule_search_locations else []
    if (BENCH / "corpus").is_dir():
        paths.append(str(BENCH / "corpus"))
    if not paths:
        raise SystemExit("same_findings: no torch installed and no .bench/corpus; name the folders to lint")
    return paths


if __name__ == "__main__":
    sys.exit(main())
