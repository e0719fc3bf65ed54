"""Measured precision: the default rules against hand-labelled call sites in real code.

    python bench/precision.py                      # dev labels and the tuning part
    python bench/precision.py --held-out           # also score the held-out part (end of a round)
    python bench/precision.py --sample 40 --sample-listing bench/corpus/unlabelled.txt
    python bench/precision.py --verdicts bench/corpus/sample-verdicts.jsonl

Three sets of labels are scored, each on its own:

- ``dev``: the first 66 labels (``../shared/corpus/dev-labels.jsonl``), which the rules
  were fitted to;
- ``tuning`` and ``held-out``: the labels in ``bench/corpus/labels-a/b/c.jsonl``, on the
  packages and repositories listed in ``bench/corpus/corpus-*.txt``, split by package
  (``split.txt``) so that no package is in both parts;
- ``fresh``: ``labels-d/e.jsonl``, packages labelled later by people who never saw the
  rules' code (``split.txt`` names them);
- ``fresh-3``: ``labels-f/g/h/i.jsonl``, labelled out of sight during round 3;
- ``fresh-4``: ``labels-j/k/l/m.jsonl``, labelled out of sight during round 4;
- ``fresh-5``: ``labels-n/o/p/q.jsonl``, labelled out of sight during round 5;
- ``fresh-6``: ``labels-r/s/t/u.jsonl``, labelled out of sight during round 6;
- ``fresh-7``: ``labels-v/w/x/y.jsonl``, labelled out of sight during round 7;
- ``fresh-8``: ``labels-z1/.../z6.jsonl``, labelled out of sight during round 8;
- ``fresh-9``: ``labels-z7/.../z10.jsonl``, labelled out of sight during round 9;
- ``fresh-10``: ``labels-z11/.../z15.jsonl``, labelled out of sight during round 10;
- ``fresh-11``: ``labels-z16/.../z20.jsonl``, labelled out of sight during round 11;
- ``fresh-12``: ``labels-z21/z22/z23.jsonl``, labelled out of sight during round 12;
- ``fresh-13``: ``labels-z24/z25/z26/z27.jsonl``, labelled out of sight during round 13;
- ``fresh-14``: for the labels of the next round, made out of sight of it.

The "held-out" and "fresh" parts were the held-out parts of round 2, "fresh-3" to "fresh-13"
those of rounds 3 to 13; scored at the end of their round, they are tuning
data since. Only the newest held-out part (``HELD_OUT``) is scored
with ``--held-out`` alone, at the end of a round of rule work, and its cases are never
listed, only counted.

Corpora are unpacked with ``../shared/corpus/fetch.sh`` and ``bench/corpus/fetch.py``
(into ``.bench/corpus`` unless ``--corpus`` names another folder). A finding counts for
a label when its line range covers the label's line and its code belongs to the label's
pattern. Prints precision and recall per pattern (rule) and overall for each part, the
tuning and dev parts' mislabelled cases with the labeller's reasons, and the findings per
rule on the corpus and on the installed torch package's own sources.

``--sample N`` prints N findings drawn at random (seeded) from a corpus nobody labelled,
with their context, to be read by hand; ``--verdicts`` scores the recorded verdicts
(one JSON object a line: ``package``, ``path``, ``line``, ``code``, ``verdict`` "right" or
"wrong", ``why``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus.fetch import folder_name, listings, read_listing  # noqa: E402
from flake8_tensorconv.config import Settings  # noqa: E402
from flake8_tensorconv.files import discover  # noqa: E402
from flake8_tensorconv.findings import Finding  # noqa: E402
from flake8_tensorconv.runner import Mode, check_files, default_jobs  # noqa: E402

# Which rule codes speak for each labelled pattern.
PATTERN_CODES: dict[str, frozenset[str]] = {
    "A": frozenset({"TCV101"}),
    "B": frozenset({"TCV102"}),
    "C": frozenset({"TCV103"}),
    "D": frozenset({"TCV104"}),
    "E": frozenset({"TCV201", "TCV202"}),
    "F": frozenset({"TCV106", "TCV207"}),
    "G": frozenset({"TCV203"}),
    "H": frozenset({"TCV204"}),
    "I": frozenset({"TCV105"}),
    "J": frozenset({"TCV206"}),
    "K": frozenset({"TCV205"}),
    "L": frozenset({"TCV109"}),
    "M": frozenset({"TCV107"}),
    "N": frozenset({"TCV212"}),
}
# "held-out" was split off the first three label sets; "fresh" is a set labelled later, out of sight of
# everyone who worked on the rules in round 2. Both were scored at the end of round 2 and are tuning data
# since (their cases are listed). "fresh-3" was round 3's held-out part, scored once at its end and tuning
# data since, as are the held-out parts of rounds 4 to 8 ("fresh-4" to "fresh-8"); the next round's
# held-out labels go in the part HELD_OUT names.
PARTS = ("dev", "tuning", "held-out", "fresh", *(f"fresh-{round_}" for round_ in range(3, 15)))
HELD_OUT = ("fresh-14",)
WILD = ROOT / "bench" / "corpus"
SPLIT = WILD / "split.txt"
SHARED_CORPUS = ROOT.parent / "shared" / "corpus"


@dataclass(frozen=True)
class Label:
    source: str
    package: str
    version: str
    path: str
    line: int
    pattern: str
    expect_flag: bool
    why: str
    part: str
    kind: str = ""

    @property
    def folder(self) -> str:
        return folder_name(self.source, self.package, self.version)

    def describe(self) -> str:
        return f"{self.folder}/{self.path}:{self.line} [{self.pattern}]"


@dataclass(frozen=True)
class Verdict:
    label: Label
    flagged: bool
    findings: tuple[Finding, ...]

    @property
    def outcome(self) -> str:
        if self.label.expect_flag:
            return "TP" if self.flagged else "FN"
        return "FP" if self.flagged else "TN"


def read_split(path: Path) -> dict[str, str]:
    """The recorded part of each package (``split.txt``: ``PART NAME`` lines)."""
    if not path.is_file():
        return {}
    split = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or words[0] not in PARTS[1:]:
            # A part this script does not know would fall back to the hash split and be scored as tuning data.
            raise SystemExit(f"{path}:{number}: expected 'PART NAME' with PART one of {', '.join(PARTS[1:])}: {line.strip()!r}")
        split[words[1]] = words[0]
    return split


def _hash(package: str) -> bytes:
    return hashlib.sha256(package.encode()).digest()


def part_of(package: str, split: dict[str, str]) -> str:
    """The package's recorded part; a package not in the split is held out when its hash says so (a third)."""
    return split.get(package) or ("held-out" if _hash(package)[0] % 3 == 0 else "tuning")


def make_split(labels: Sequence[Label]) -> dict[str, str]:
    """Hold out a third of the packages, with a third of the flag labels.

    Packages are ranked by their number of flag labels; of each run of three, the one whose
    name hashes lowest is held out. Decided from the labels alone, before any scoring.
    """
    flags: Counter[str] = Counter()
    for label in labels:
        flags[label.package] += label.expect_flag
    ranked = sorted(flags, key=lambda package: (-flags[package], _hash(package)))
    split = {}
    for start in range(0, len(ranked), 3):
        block = ranked[start : start + 3]
        held = min(block, key=_hash)
        for package in block:
            split[package] = "held-out" if package == held else "tuning"
    return split


def load_labels(path: Path, dev: bool, split: dict[str, str] | None = None) -> tuple[list[Label], int]:
    """The decided labels of a file, and how many it marks unsure."""
    labels = []
    unsure = 0
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            if record["pattern"] not in PATTERN_CODES or record["expect"] not in ("flag", "no-flag", "unsure"):
                raise SystemExit(f"{path}:{number}: unknown pattern {record['pattern']!r} or expect {record['expect']!r}")
            if record["expect"] == "unsure":
                unsure += 1
                continue
            package = record["package_or_repo"]
            labels.append(
                Label(
                    source=record.get("source", "pypi"),
                    package=package,
                    version=record["version_or_commit"],
                    path=record["path"],
                    line=int(record["line"]),
                    pattern=record["pattern"],
                    expect_flag=record["expect"] == "flag",
                    why=record.get("why", ""),
                    part="dev" if dev else part_of(package, split or {}),
                    kind=record.get("kind", ""),
                )
            )
    return labels, unsure


def dev_folders(listing: Path, labels: Sequence[Label]) -> list[str]:
    """NAME-VERSION of every package in the dev corpus listing (``name==version`` lines) and in its labels."""
    folders = {label.folder for label in labels if label.part == "dev"}
    if listing.is_file():
        for line in listing.read_text(encoding="utf-8").splitlines():
            name, _, version = line.strip().partition("==")
            if name and version and not name.startswith("#"):
                folders.add(f"{name}-{version}")
    return sorted(folders)


def ensure_corpus(corpus: Path, folders: Sequence[str], command: Sequence[str], *after: str) -> None:
    """Download and unpack a corpus (``COMMAND CORPUS AFTER...``) unless every folder is already there."""
    missing = [folder for folder in folders if not (corpus / folder).is_dir()]
    if not missing:
        return
    print(f"fetching into {corpus} (missing: {', '.join(missing)})", file=sys.stderr)
    subprocess.run([*command, str(corpus), *after], check=True)


def without_missing(corpus: Path, labels: list[Label], wild: list[str]) -> tuple[list[Label], list[str]]:
    """The labels and folders of the packages unpacked in ``corpus``; what is left out is counted per part."""
    present = {folder for folder in wild if (corpus / folder).is_dir()}
    left_out: Counter[str] = Counter()
    packages: dict[str, set[str]] = defaultdict(set)
    kept = []
    for label in labels:
        if label.part == "dev" or label.folder in present:
            kept.append(label)
        else:
            left_out[label.part] += 1
            packages[label.part].add(label.folder)
    for part in PARTS:
        if left_out[part]:
            print(f"{part}: {left_out[part]} labels in {len(packages[part])} packages not unpacked in {corpus}, left out")
    return kept, sorted(present)


def lint(paths: Sequence[str], jobs: int) -> dict[str, list[Finding]]:
    """Findings of the default rules in the Python files, by normalised file path.

    Notebooks are read through their converted ``.ipynb.py`` (what the labels name): the
    ``.ipynb`` files themselves are left out so that nothing is counted twice. A converted
    notebook that does not parse as a whole (a cell that is not Python, or IPython syntax the
    converter misread) is checked as the tool checks the notebook: its own cells, a cell that is
    not Python left out (see :func:`lint_as_cells`).
    """
    files = [path for path in discover(paths).files if path.endswith(".py")]
    findings: dict[str, list[Finding]] = {}
    for result in check_files(files, Settings(), Mode(), jobs):
        if result.error:
            print(f"{result.path}: {result.error}", file=sys.stderr)
        path = os.path.normpath(os.path.abspath(result.path))
        unparsable = [finding for finding in result.findings if finding.code == "TCV001"]
        findings[path] = (unparsable and lint_as_cells(path)) or result.findings
    return findings


def lint_as_cells(path: str) -> list[Finding] | None:
    """The findings of a converted notebook (``NAME.ipynb.py``) as the tool finds them in the notebook, on the ``.py`` lines.

    The notebook's own cells are checked (the tool's handling of IPython syntax, not the converter's);
    each cell's row ``r`` is line ``r`` of that cell's block in the ``.py`` file, where ``nb2py`` keeps one
    line per line. None when ``path`` is not a conversion of a notebook beside it.
    """
    from bench.corpus.nb2py import cell_lines, notebook_cells, python_cells
    from flake8_tensorconv.notebook import CellParseError, CodeCell, lint_cells

    if not path.endswith(".ipynb.py") or not os.path.isfile(path[: -len(".py")]):
        return None
    try:
        with open(path[: -len(".py")], encoding="utf-8") as file:
            notebook = json.load(file)
        converted = python_cells(notebook)
        with open(path, encoding="utf-8") as file:
            if file.read() != "\n\n".join(converted) + "\n":
                return None
        sources = [
            "\n".join(cell_lines(cell.get("source", cell.get("input", ""))))
            for cell in notebook_cells(notebook)
            if cell.get("cell_type") == "code"
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    first_lines = []
    line = 1
    for text in converted:
        first_lines.append(line)
        line += text.count("\n") + 2
    try:
        found = lint_cells([CodeCell(number, text) for number, text in enumerate(sources)], Settings())
    except CellParseError:
        return None
    moved = []
    for finding in found:
        shift = first_lines[finding.cell] - 1
        moved.append(
            finding._replace(
                start=finding.start._replace(line=finding.start.line + shift),
                end=finding.end._replace(line=finding.end.line + shift),
                cell=None,
                fix=None,
                related=(),
            )
        )
    return moved


def score(labels: Iterable[Label], corpus: Path, findings: dict[str, list[Finding]]) -> list[Verdict]:
    verdicts = []
    for label in labels:
        path = os.path.normpath(os.path.abspath(corpus / label.folder / label.path))
        if not os.path.isfile(path):
            raise SystemExit(f"labelled file not found: {path}")
        codes = PATTERN_CODES[label.pattern]
        matching = tuple(
            finding
            for finding in findings.get(path, ())
            if finding.code in codes and finding.start.line <= label.line <= finding.end.line
        )
        verdicts.append(Verdict(label=label, flagged=bool(matching), findings=matching))
    return verdicts


def ratio(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.3f}" if denominator else "  n/a"


def print_scores(title: str, verdicts: Sequence[Verdict]) -> None:
    def row(name: str, group: Sequence[Verdict]) -> str:
        counts = Counter(verdict.outcome for verdict in group)
        tp, fp, fn, tn = counts["TP"], counts["FP"], counts["FN"], counts["TN"]
        return (
            f"{name:<8} {len(group):>6} {tp:>4} {fp:>4} {fn:>4} {tn:>4}   "
            f"{ratio(tp, tp + fp):>9} {ratio(tp, tp + fn):>7}"
        )

    packages = len({verdict.label.package for verdict in verdicts})
    print(f"\n== {title}: {len(verdicts)} labels in {packages} packages or repositories")
    print(f"{'pattern':<8} {'labels':>6} {'TP':>4} {'FP':>4} {'FN':>4} {'TN':>4}   {'precision':>9} {'recall':>7}")
    by_pattern: dict[str, list[Verdict]] = defaultdict(list)
    for verdict in verdicts:
        by_pattern[verdict.label.pattern].append(verdict)
    for pattern in sorted(by_pattern):
        codes = "/".join(sorted(PATTERN_CODES[pattern]))
        print(row(pattern, by_pattern[pattern]) + f"   {codes}")
    print(row("overall", verdicts))


def print_mislabelled(verdicts: Sequence[Verdict]) -> None:
    wrong = [verdict for verdict in verdicts if verdict.outcome in ("FP", "FN")]
    print(f"\nmislabelled cases: {len(wrong)}")
    for verdict in sorted(wrong, key=lambda v: (v.outcome, v.label.pattern, v.label.describe())):
        print(f"  {verdict.outcome} {verdict.label.describe()}: {verdict.label.why}")
        for finding in verdict.findings:
            print(f"       {finding.code} at {finding.start.line}:{finding.start.column + 1}: {finding.message}")


def print_counts(title: str, findings: dict[str, list[Finding]]) -> None:
    counts = Counter(finding.code for found in findings.values() for finding in found)
    total = sum(counts.values())
    files = sum(1 for found in findings.values() if found)
    print(f"\nfindings per rule, {title}: {total} in {files} of {len(findings)} files")
    for code, count in sorted(counts.items()):
        print(f"  {code} {count:>6}")


def within(findings: dict[str, list[Finding]], corpus: Path, folders: Sequence[str]) -> dict[str, list[Finding]]:
    """The findings in files under the corpus's FOLDERS."""
    prefixes = tuple(os.path.normpath(os.path.abspath(corpus / folder)) + os.sep for folder in folders)
    return {path: found for path, found in findings.items() if path.startswith(prefixes)}


def installed_torch() -> Path | None:
    """The installed torch package's folder, found without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def sample_findings(corpus: Path, listing: Path, count: int, seed: str, jobs: int) -> None:
    """Print COUNT findings drawn at random from an unlabelled corpus, with context, to be read by hand."""
    entries = list(read_listing(listing))
    ensure_corpus(corpus, [entry.folder for entry in entries], [sys.executable, str(WILD / "fetch.py")], str(listing))
    findings = lint([str(corpus / entry.folder) for entry in entries], jobs)
    flat = sorted((path, finding) for path, found in findings.items() for finding in found)
    chosen = random.Random(seed).sample(flat, min(count, len(flat)))
    print(f"{len(chosen)} of {len(flat)} findings, seed {seed!r}")
    for path, finding in sorted(chosen):
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        relative = os.path.relpath(path, corpus)
        print(f"\n--- {relative}:{finding.start.line}:{finding.start.column + 1}: {finding.code} {finding.message}")
        for number in range(max(1, finding.start.line - 6), min(len(lines), finding.end.line + 2) + 1):
            print(f"{number:>6}{'>' if number == finding.start.line else ' '} {lines[number - 1]}")


def score_verdicts(path: Path) -> None:
    verdicts = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    right = sum(1 for verdict in verdicts if verdict["verdict"] == "right")
    print(f"\n== sample of findings on unlabelled code ({path.name}): {right} right of {len(verdicts)}, precision {ratio(right, len(verdicts))}")
    by_code: dict[str, Counter[str]] = defaultdict(Counter)
    for verdict in verdicts:
        by_code[verdict["code"]][verdict["verdict"]] += 1
    for code, counts in sorted(by_code.items()):
        print(f"  {code}: {counts['right']} right, {counts['wrong']} wrong")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / ".bench" / "corpus", help="where the corpora are (or are unpacked to)")
    parser.add_argument("--dev-labels", type=Path, default=SHARED_CORPUS / "dev-labels.jsonl", help="the dev labels")
    parser.add_argument("--labels", type=Path, nargs="*", help="other labels (default: bench/corpus/labels-*.jsonl)")
    parser.add_argument("--held-out", action="store_true", help="also score the held-out part (only at the end of a round)")
    parser.add_argument("--make-split", action="store_true", help="write bench/corpus/split.txt from the labels (once, before scoring)")
    parser.add_argument("--sample", type=int, metavar="N", help="print N random findings of an unlabelled corpus and stop")
    parser.add_argument("--sample-listing", type=Path, default=WILD / "unlabelled.txt", help="the unlabelled corpus's listing")
    parser.add_argument("--seed", default="tensorconv", help="seed of --sample")
    parser.add_argument("--verdicts", type=Path, help="score recorded verdicts on a sample of findings")
    parser.add_argument("--torch", type=Path, help="torch sources to count findings on (default: the installed torch package)")
    parser.add_argument("--no-torch", action="store_true", help="skip the count on torch's sources")
    parser.add_argument(
        "--skip-missing",
        action="store_true",
        help="score only the packages already unpacked in --corpus (say how many labels each part leaves out) instead of fetching the rest",
    )
    parser.add_argument("-j", "--jobs", type=int, default=default_jobs(), help="files checked in parallel")
    args = parser.parse_args(argv)
    corpus: Path = args.corpus

    if args.sample:
        sample_findings(corpus, args.sample_listing, args.sample, args.seed, args.jobs)
        return 0
    if args.verdicts and args.labels == []:  # `--verdicts FILE --labels`: only the sample's verdicts
        score_verdicts(args.verdicts)
        return 0

    split = read_split(SPLIT)
    labels, unsure = load_labels(args.dev_labels, dev=True)
    for path in args.labels if args.labels is not None else sorted(WILD.glob("labels-*.jsonl")):
        more, more_unsure = load_labels(path, dev=False, split=split)
        labels += more
        unsure += more_unsure
    if args.make_split:
        if split:  # a split is made once: remaking it would move scored packages between parts
            print(f"{SPLIT} exists; packages labelled later are held out or not by their name's hash, or named there by hand")
            return 2
        wild_labels = [label for label in labels if label.part != "dev"]
        made = make_split(wild_labels)
        lines = [f"{part} {package}" for package, part in sorted(made.items(), key=lambda item: (item[1], item[0].lower()))]
        SPLIT.write_text("# Which labelled packages are held out (bench/precision.py --make-split; never edited after scoring)\n" + "\n".join(lines) + "\n")
        print(f"wrote {SPLIT}: {sum(part == 'held-out' for part in made.values())} of {len(made)} packages held out")
        return 0
    folders = dev_folders(args.dev_labels.parent / "dev-corpus.txt", labels)
    ensure_corpus(corpus, folders, ["bash", str(args.dev_labels.parent / "fetch.sh")])
    wild = sorted({entry.folder for listing in listings(()) for entry in read_listing(listing)} | {label.folder for label in labels if label.part != "dev"})
    if args.skip_missing:
        labels, wild = without_missing(corpus, labels, wild)
    else:
        ensure_corpus(corpus, wild, [sys.executable, str(WILD / "fetch.py")])
    findings = lint([str(corpus / folder) for folder in folders + wild], args.jobs)
    verdicts = score(labels, corpus, findings)

    print(f"labels: {len(labels)} decided, {unsure} unsure (not scored); corpus: {corpus}")
    for part in PARTS:
        group = [verdict for verdict in verdicts if verdict.label.part == part]
        if part in HELD_OUT and not args.held_out:
            print(f"\n== {part}: {len(group)} labels, not scored (pass --held-out at the end of a round)")
            continue
        print_scores(part, group)
    print_mislabelled([verdict for verdict in verdicts if verdict.label.part not in HELD_OUT])
    if args.verdicts:
        score_verdicts(args.verdicts)
    print_counts(f"dev corpus ({len(folders)} packages)", within(findings, corpus, folders))
    print_counts(f"labelled corpus ({len(wild)} packages and repositories)", within(findings, corpus, wild))
    if not args.no_torch:
        torch_dir = args.torch or installed_torch()
        if torch_dir is None or not torch_dir.is_dir():
            print("\ntorch sources not found; pass --torch DIR or --no-torch", file=sys.stderr)
            return 2
        print_counts(f"torch ({torch_dir})", lint([str(torch_dir)], args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
