"""Download and unpack the labelled corpus listed in ``bench/corpus/corpus-*.txt``.

    python bench/corpus/fetch.py DEST [LISTING ...]

Each listing line is ``pypi NAME==VERSION KIND`` or ``github OWNER/REPO@COMMIT KIND``
(``#`` starts a comment). A PyPI package is unpacked from its wheel into
``DEST/NAME-VERSION/``; a GitHub repository at its exact commit into
``DEST/OWNER+REPO-COMMIT12/`` (its ``.py`` and ``.ipynb`` files, which is all the
labels name), from a local git mirror when one is there (``--mirrors``, laid out as
``OWNER+REPO/…/*.git`` or ``OWNER+REPO/repo``), else by ``git clone``. Notebooks are
converted to ``NOTEBOOK.ipynb.py`` beside them by ``nb2py.py``, which is what the labels'
paths name. Folders already there are kept as they are.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent


class Entry(NamedTuple):
    source: str  # "pypi" or "github"
    name: str  # NAME, or OWNER/REPO
    version: str  # VERSION, or the full commit
    kind: str

    @property
    def folder(self) -> str:
        return folder_name(self.source, self.name, self.version)


def folder_name(source: str, name: str, version: str) -> str:
    """Where a package or repository is unpacked, relative to the corpus folder."""
    if source == "github":
        return f"{name.replace('/', '+')}-{version[:12]}"
    return f"{name}-{version}"


def read_listing(path: Path) -> Iterator[Entry]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 3 or words[0] not in ("pypi", "github"):
            raise SystemExit(f"{path}:{number}: expected 'pypi NAME==VERSION KIND' or 'github OWNER/REPO@COMMIT KIND'")
        source, spec, kind = words
        name, _, version = spec.partition("==" if source == "pypi" else "@")
        if not name or not version:
            raise SystemExit(f"{path}:{number}: no version or commit in {spec!r}")
        yield Entry(source, name, version, kind)


def listings(paths: Sequence[str]) -> list[Path]:
    return [Path(p) for p in paths] if paths else sorted(HERE.glob("corpus-*.txt"))


def fetch_pypi(entry: Entry, dest: Path) -> None:
    wheels = dest / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    spec = f"{entry.name}=={entry.version}"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(wheels), spec],
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"pip could not download a wheel of {spec} (pip exit status {done.returncode}, above)")
    stem = entry.name.lower().replace("-", "_").replace(".", "_")
    matches = [w for w in wheels.glob("*.whl") if w.name.lower().startswith(f"{stem}-{entry.version}-".lower())]
    if not matches:
        raise SystemExit(f"no wheel for {spec} in {wheels}")
    with zipfile.ZipFile(matches[0]) as archive:
        archive.extractall(dest / entry.folder)


def _mirror(mirrors: Path, name: str) -> str | None:
    base = mirrors / name.replace("/", "+")
    candidates = [base / "repo", *map(Path, glob.glob(str(base / "**" / "*.git"), recursive=True))]
    for candidate in candidates:
        if (candidate / "HEAD").is_file():
            return str(candidate)  # a bare repository
        if (candidate / ".git" / "HEAD").is_file():
            return str(candidate / ".git")  # a work tree's repository
    return None


def fetch_github(entry: Entry, dest: Path, mirrors: Path) -> None:
    """The repository's Python files and notebooks at the commit (what the labels name), notebooks converted."""
    git_dir = _mirror(mirrors, entry.name)
    with tempfile.TemporaryDirectory() as scratch:
        if git_dir is None:
            git_dir = os.path.join(scratch, "clone")
            subprocess.run(["git", "clone", "-q", "--bare", f"https://github.com/{entry.name}.git", git_dir], check=True)
        partial = dest / (entry.folder + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        _extract_sources(git_dir, entry.version, partial)
        subprocess.run([sys.executable, str(HERE / "nb2py.py"), str(partial)], check=False)
        partial.rename(dest / entry.folder)


def _extract_sources(git_dir: str, commit: str, target: Path) -> None:
    """Write every .py and .ipynb file of ``commit`` under ``target``; blobs a snapshot lacks are skipped."""
    listed = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", commit], capture_output=True)
    if listed.returncode != 0:
        raise SystemExit(f"{git_dir}: cannot list commit {commit}: {listed.stderr.decode(errors='replace').strip()}")
    listing = listed.stdout
    wanted = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        _mode, kind, sha = meta.split()
        if kind == b"blob" and path.endswith((b".py", b".ipynb")):
            wanted.append((sha.decode(), os.fsdecode(path)))
    with subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as batch:
        assert batch.stdin is not None and batch.stdout is not None
        for sha, path in wanted:
            batch.stdin.write(sha.encode() + b"\n")
            batch.stdin.flush()
            header = batch.stdout.readline().split()
            if len(header) < 3 or header[1] != b"blob":  # "<sha> missing": not in this snapshot
                continue
            data = batch.stdout.read(int(header[2]))
            batch.stdout.read(1)  # the newline after the contents
            out = target / path
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
        batch.stdin.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("listing", nargs="*", help="corpus listings (default: bench/corpus/corpus-*.txt)")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="local git mirrors of GitHub repositories")
    args = parser.parse_args(argv)
    for listing in listings(args.listing):
        for entry in read_listing(listing):
            if (args.dest / entry.folder).is_dir():
                continue
            print(f"fetching {entry.name} {entry.version} -> {args.dest / entry.folder}", file=sys.stderr)
            if entry.source == "pypi":
                fetch_pypi(entry, args.dest)
            else:
                fetch_github(entry, args.dest, args.mirrors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
