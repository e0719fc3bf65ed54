"""Measured precision: the default rules against hand-labelled call sites in real packages.

    python bench/precision.py [--corpus DIR] [--labels FILE] [--torch DIR]

Unpacks the dev corpus with ``../shared/corpus/fetch.sh`` (into ``.bench/corpus``
unless ``--corpus`` names a folder that already holds it), lints it with the rules
that are on by default, and scores the findings against the labels: a finding
counts for a label when its line range covers the label's line and its code
belongs to the label's pattern. Prints precision and recall (overall and per
pattern), every mislabelled case with the labeller's reason, and the findings per
rule on the corpus and on the installed torch package's own sources.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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
}
SHARED_CORPUS = ROOT.parent / "shared" / "corpus"


@dataclass(frozen=True)
class Label:
    package: str
    version: str
    path: str
    line: int
    pattern: str
    expect_flag: bool
    why: str

    @property
    def folder(self) -> str:
        return f"{self.package}-{self.version}"

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


def load_labels(path: Path) -> list[Label]:
    labels = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            if record["pattern"] not in PATTERN_CODES or record["expect"] not in ("flag", "no-flag"):
                raise SystemExit(f"{path}:{number}: unknown pattern {record['pattern']!r} or expect {record['expect']!r}")
            labels.append(
                Label(
                    package=record["package_or_repo"],
                    version=record["version_or_commit"],
                    path=record["path"],
                    line=int(record["line"]),
                    pattern=record["pattern"],
                    expect_flag=record["expect"] == "flag",
                    why=record.get("why", ""),
                )
            )
    return labels


def corpus_folders(listing: Path, labels: Sequence[Label]) -> list[str]:
    """NAME-VERSION of every package in the corpus listing (``name==version`` lines) and in the labels."""
    folders = {label.folder for label in labels}
    if listing.is_file():
        for line in listing.read_text(encoding="utf-8").splitlines():
            name, _, version = line.strip().partition("==")
            if name and version and not name.startswith("#"):
                folders.add(f"{name}-{version}")
    return sorted(folders)


def ensure_corpus(corpus: Path, folders: Sequence[str], fetch: Path) -> None:
    """Download and unpack the corpus unless every package is already there."""
    missing = [folder for folder in folders if not (corpus / folder).is_dir()]
    if not missing:
        return
    if not fetch.is_file():
        raise SystemExit(f"{corpus} lacks {', '.join(missing)} and {fetch} is not there to fetch them")
    print(f"fetching the corpus into {corpus} (missing: {', '.join(missing)})", file=sys.stderr)
    subprocess.run(["bash", str(fetch), str(corpus)], check=True)


def lint(paths: Sequence[str], jobs: int) -> dict[str, list[Finding]]:
    """Findings of the default rules, by normalised file path."""
    files = discover(paths).files
    findings: dict[str, list[Finding]] = {}
    for result in check_files(files, Settings(), Mode(), jobs):
        if result.error:
            print(f"{result.path}: {result.error}", file=sys.stderr)
        findings[os.path.normpath(os.path.abspath(result.path))] = result.findings
    return findings


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


def print_scores(verdicts: Sequence[Verdict]) -> None:
    def row(name: str, group: Sequence[Verdict]) -> str:
        counts = Counter(verdict.outcome for verdict in group)
        tp, fp, fn, tn = counts["TP"], counts["FP"], counts["FN"], counts["TN"]
        return (
            f"{name:<8} {len(group):>6} {tp:>4} {fp:>4} {fn:>4} {tn:>4}   "
            f"{ratio(tp, tp + fp):>9} {ratio(tp, tp + fn):>7}"
        )

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


def installed_torch() -> Path | None:
    """The installed torch package's folder, found without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / ".bench" / "corpus", help="where the corpus is (or is unpacked to)")
    parser.add_argument("--labels", type=Path, default=SHARED_CORPUS / "dev-labels.jsonl", help="the labels, one JSON object a line")
    parser.add_argument("--fetch", type=Path, help="the script that downloads the corpus (default: fetch.sh beside the labels)")
    parser.add_argument("--torch", type=Path, help="torch sources to count findings on (default: the installed torch package)")
    parser.add_argument("--no-torch", action="store_true", help="skip the count on torch's sources")
    parser.add_argument("-j", "--jobs", type=int, default=default_jobs(), help="files checked in parallel")
    args = parser.parse_args(argv)

    labels = load_labels(args.labels)
    corpus: Path = args.corpus
    packages = corpus_folders(args.labels.parent / "dev-corpus.txt", labels)
    ensure_corpus(corpus, packages, args.fetch or args.labels.parent / "fetch.sh")
    folders = [str(corpus / package) for package in packages]
    findings = lint(folders, args.jobs)
    verdicts = score(labels, corpus, findings)

    print(f"labels: {args.labels} ({len(labels)}); corpus: {corpus}\n")
    print_scores(verdicts)
    print_mislabelled(verdicts)
    print_counts(f"dev corpus ({len(folders)} packages)", findings)
    if not args.no_torch:
        torch_dir = args.torch or installed_torch()
        if torch_dir is None or not torch_dir.is_dir():
            print("\ntorch sources not found; pass --torch DIR or --no-torch", file=sys.stderr)
            return 2
        print_counts(f"torch ({torch_dir})", lint([str(torch_dir)], args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
