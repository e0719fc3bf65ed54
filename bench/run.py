"""How fast tensorconv is next to its peers, on the same files, in one run.

    python bench/run.py [--repeat 3] [--corpora nn,torch,dev] [--torch DIR] [--dev-corpus DIR]

Corpora: ``nn`` (the installed torch package's ``torch/nn``), ``torch`` (all of it) and
``dev`` (the dev corpus: fetched with ``../shared/corpus/fetch.sh`` into ``.bench/corpus``
unless ``--dev-corpus`` names it). Every tool runs in its own process, started the way a
user starts it, in an empty folder outside the repository (no configuration is picked
up); each figure is the median of ``--repeat`` runs, after one untimed run that warms
the file cache and writes bytecode (into ``.bench/pycache``, not the source tree). The
runs go in rounds, each tool once per round (every other round in reverse order), and
each ratio is the median over the rounds of the ratio within a round, where the two
tools ran one right after the other: a machine that slows down or speeds up during the
bench (shared or throttled virtual machines do) moves both sides of a ratio alike.

Printed, per corpus, with the project's target where it has one:

- ``flake8 -j1`` with the plugin / without it. Both run the same flake8 installation
  through the same wrapper; the one without drops this package from flake8's plugin
  discovery, and the run checks that the package was not even imported.
- ``tensorconv check`` / TorchFix, / ``ruff check --select ALL --no-cache``, / a bare
  ``ast.parse`` loop over the same files (a process of its own, interpreter start
  included, like the tools). ``tensorconv check`` runs as a user runs it (all cores, no
  cache); the ``-j1`` figure is shown beside it.
- the engine's time (parse and analysis, in-process) / a bare ``libcst.parse_module``
  loop over the files that hold a trigger token (libcst is a baseline only: it lives
  in the bench's virtualenv, the linter does not use it).
- ``-j1`` / ``-jN`` (N: the cores this process may use), and a second, cached run /
  the first one.

TorchFix (and libcst) are installed into ``.bench/venv-torchfix`` on first use, with
``constraints.txt`` so that nothing touches torch. TorchFix needs minutes for torch/nn
and hours for all of torch, so it runs on the corpora named by ``--torchfix-corpora``
(default: nn, where the target is).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / ".bench"
# The venv's ruff (the test extra installs it) when the bench runs without an activated venv.
RUFF = str(Path(sys.executable).with_name("ruff")) if Path(sys.executable).with_name("ruff").is_file() else "ruff"
VENV = BENCH / "venv-torchfix"
sys.path.insert(0, str(ROOT))

from flake8_tensorconv.config import Settings  # noqa: E402
from flake8_tensorconv.engine import needs_parse, select_rules  # noqa: E402
from flake8_tensorconv.files import discover  # noqa: E402
from flake8_tensorconv.source import read_source  # noqa: E402

# flake8 with or without this package among its plugins: argv[1] is the distribution to leave out ("-": none).
FLAKE8 = """
import sys
from flake8.plugins import finder
left_out = sys.argv.pop(1)
if left_out != "-":
    found = finder._find_importlib_plugins
    finder._find_importlib_plugins = lambda: (p for p in found() if p.package != left_out)
from flake8.main.cli import main
try:
    code = main(sys.argv[1:])
finally:
    print("bench: plugin imported:", "flake8_tensorconv" in sys.modules, file=sys.stderr)
raise SystemExit(code)
"""
# What every linter does at least: read each .py file and parse it with ast.
AST_LOOP = """
import ast, os, sys
for directory, folders, names in os.walk(sys.argv[1]):
    folders.sort()
    for name in sorted(names):
        if name.endswith(".py"):
            with open(os.path.join(directory, name), "rb") as handle:
                try:
                    ast.parse(handle.read())
                except (SyntaxError, ValueError):
                    pass
"""
# The engine on a list of files, timed in-process: decode, parse, infer, rules.
ENGINE_LOOP = """
import sys, time
from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source, select_rules
from flake8_tensorconv.source import decode
import flake8_tensorconv.inference
paths = open(sys.argv[1], encoding="utf-8").read().split("\\n")
sources = [open(path, "rb").read() for path in paths]
settings = Settings()
rules = select_rules(settings)
start = time.perf_counter()
for raw in sources:
    try:
        lint_source(decode(raw), settings, rules, prefiltered=True)
    except Exception:
        pass
print(time.perf_counter() - start)
"""
LIBCST_LOOP = """
import sys, time
import libcst
paths = open(sys.argv[1], encoding="utf-8").read().split("\\n")
sources = [open(path, "rb").read() for path in paths]
start = time.perf_counter()
for raw in sources:
    try:
        libcst.parse_module(raw)
    except Exception:
        pass
print(time.perf_counter() - start)
"""


@dataclass
class Timing:
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    inner: list[float] = field(default_factory=list)  # what the process printed: in-process seconds

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)

    @property
    def seconds(self) -> float:
        return statistics.median(self.inner)


class Bench:
    def __init__(self, repeat: int, workdir: Path) -> None:
        self.repeat = repeat
        self.workdir = workdir
        self.env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        self.env["PYTHONPYCACHEPREFIX"] = str(BENCH / "pycache")
        self.env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
        self.last_stderr = ""

    def run(self, argv: Sequence[str], capture: bool = False) -> tuple[float, float, str]:
        """One run: wall seconds, CPU seconds (the process and its children), and its stdout when captured."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        completed = subprocess.run(
            argv, cwd=self.workdir, env=self.env, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if completed.returncode not in (0, 1):
            raise SystemExit(f"bench: {' '.join(argv)} failed ({completed.returncode}):\n{completed.stderr[-2000:]}")
        self.last_stderr = completed.stderr
        return wall, cpu, completed.stdout if capture else ""

    def rounds(self, specs: list[Spec]) -> dict[str, Timing]:
        """Every spec once (untimed, to warm up), then ``repeat`` rounds of every spec once, every
        other round in reverse order (so that neither of two neighbours always goes first);
        ``prepare`` runs before each run."""
        timings = {spec.label: Timing() for spec in specs}
        for spec in specs:
            if spec.prepare:
                spec.prepare()
            self.run(spec.argv)
        for round_number in range(self.repeat):
            for spec in specs if round_number % 2 == 0 else reversed(specs):
                if spec.prepare:
                    spec.prepare()
                wall, cpu, out = self.run(spec.argv, capture=spec.inner)
                timing = timings[spec.label]
                timing.walls.append(wall)
                timing.cpus.append(cpu)
                if spec.inner:
                    timing.inner.append(float(out.strip().splitlines()[-1]))
                if spec.check:
                    spec.check()
        for spec in specs:
            timing = timings[spec.label]
            shown = f"{timing.seconds:8.3f} s in-process" if spec.inner else f"{timing.wall:8.3f} s wall {timing.cpu:8.3f} s CPU"
            spread = f"(runs {min(timing.inner or timing.walls):.3f}-{max(timing.inner or timing.walls):.3f})"
            print(f"  {spec.label:<44} {shown}  {spread}", flush=True)
        return timings


@dataclass
class Spec:
    """One tool's command, as the bench runs it."""

    label: str
    argv: list[str]
    prepare: Callable[[], None] | None = None  # before each run (untimed)
    check: Callable[[], None] | None = None  # after each timed run
    inner: bool = False  # the process prints its own in-process seconds: that is the figure


@dataclass
class Ratio:
    corpus: str
    name: str
    value: float  # the median over rounds of the ratio of wall-clock times within a round (the target's measure)
    target: str = ""  # e.g. "<= 1.05"
    cpu: float | None = None  # the same of CPU times
    spread: tuple[float, float] | None = None  # the lowest and highest ratio of a round

    @property
    def met(self) -> bool | None:
        if not self.target:
            return None
        op, bound = self.target.split()
        return self.value <= float(bound) if op == "<=" else self.value >= float(bound)


def paired(a: list[float], b: list[float]) -> tuple[float, tuple[float, float]]:
    """The median of the ratios a[i] / b[i] of runs of one round, and their range."""
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return statistics.median(ratios), (min(ratios), max(ratios))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure; the median is shown (default 3)")
    parser.add_argument("--corpora", default="nn,torch,dev", help="which of nn, torch, dev (default: all three)")
    parser.add_argument("--torch", metavar="DIR", help="the torch package folder (default: the installed one)")
    parser.add_argument("--dev-corpus", metavar="DIR", help="the unpacked dev corpus (default: fetched into .bench/corpus)")
    parser.add_argument(
        "--torchfix-corpora",
        default="nn",
        help="where TorchFix runs too (default: nn; it needs minutes per 10k lines, hours for all of torch)",
    )
    args = parser.parse_args(argv)
    corpora = [name.strip() for name in args.corpora.split(",") if name.strip()]
    unknown = set(corpora) - {"nn", "torch", "dev"}
    if unknown or args.repeat < 1:
        parser.error(f"unknown corpus {sorted(unknown)}" if unknown else "--repeat must be at least 1")

    BENCH.mkdir(exist_ok=True)
    torch_dir = Path(args.torch) if args.torch else _installed_torch()
    paths = {"nn": torch_dir / "nn", "torch": torch_dir}
    if "dev" in corpora:
        paths["dev"] = Path(args.dev_corpus) if args.dev_corpus else _fetch_dev_corpus()
    venv_python = _torchfix_venv()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    _check_plugin_installed()

    print(f"bench: {cores} cores, {platform.python_implementation()} {platform.python_version()}, {_versions(venv_python)}")
    print(f"bench: load average before: {', '.join(f'{load:.1f}' for load in os.getloadavg())}; median of {args.repeat} runs")

    torchfix_corpora = {name.strip() for name in args.torchfix_corpora.split(",")}
    ratios: list[Ratio] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tensorconv-bench-") as workdir:
        bench = Bench(args.repeat, Path(workdir))
        for corpus in corpora:
            ratios += _bench_corpus(bench, corpus, paths[corpus], cores, venv_python, corpus in torchfix_corpora)
    _summary(ratios, cores)
    print(f"(bench took {(time.perf_counter() - started) / 60:.1f} min; load average after: {os.getloadavg()[0]:.1f})")
    return 0


def _bench_corpus(bench: Bench, corpus: str, path: Path, cores: int, venv_python: Path, with_torchfix: bool) -> list[Ratio]:
    files = discover([str(path)]).files
    rules = select_rules(Settings())
    triggered = [file for file in files if needs_parse(_text(file), rules)]
    lines = sum(_text(file).count("\n") for file in files)
    print(f"\n{corpus}: {path}: {len(files)} files, {lines} lines; {len(triggered)} hold a trigger token", flush=True)
    listing = BENCH / f"trigger-files-{corpus}.txt"
    listing.write_text("\n".join(triggered), encoding="utf-8")

    tensorconv = [sys.executable, "-m", "flake8_tensorconv", "check", "--no-cache", "--exit-zero"]
    flake8 = [sys.executable, "-c", FLAKE8]
    cache_dir = bench.workdir / ".tensorconv_cache"

    def clear_cache() -> None:
        shutil.rmtree(cache_dir, ignore_errors=True)

    cached_command = [sys.executable, "-m", "flake8_tensorconv", "check", "--exit-zero", str(path)]

    def fill_cache() -> None:
        clear_cache()
        bench.run(cached_command)

    # What a ratio compares stands side by side, so that both run at nearly the same time.
    specs = [
        Spec("flake8 -j1, with the plugin", [*flake8, "-", "-j1", str(path)], check=lambda: _expect_plugin(bench, imported=True)),
        Spec("flake8 -j1, without the plugin", [*flake8, "flake8-tensorconv", "-j1", str(path)], check=lambda: _expect_plugin(bench, imported=False)),
        Spec("ast.parse loop (one process)", [sys.executable, "-c", AST_LOOP, str(path)]),
        Spec(f"tensorconv check (-j{cores}, no cache)", [*tensorconv, str(path)]),
        Spec("ruff check --select ALL --no-cache", [RUFF, "check", "--select", "ALL", "--no-cache", "--exit-zero", str(path)]),
        Spec("tensorconv check -j1 (no cache)", [*tensorconv, "-j1", str(path)]),
        *([Spec("torchfix", [str(VENV / "bin" / "torchfix"), str(path)])] if with_torchfix else []),
        Spec(f"engine on the {len(triggered)} trigger files", [sys.executable, "-c", ENGINE_LOOP, str(listing)], inner=True),
        Spec(f"libcst.parse_module on the {len(triggered)} trigger files", [str(venv_python), "-c", LIBCST_LOOP, str(listing)], inner=True),
        Spec("tensorconv check, first run (empty cache)", cached_command, prepare=clear_cache),
        Spec("tensorconv check, second run (cached)", cached_command, prepare=fill_cache),
    ]
    timings = bench.rounds(specs)
    clear_cache()
    with_plugin, without_plugin, ast_loop, default, ruff, serial = (timings[spec.label] for spec in specs[:6])
    torchfix = timings["torchfix"] if with_torchfix else None
    engine, libcst, first, second = (timings[spec.label] for spec in specs[-4:])

    def ratio(name: str, a: Timing, b: Timing, target: str = "") -> Ratio:
        if a.inner:
            value, spread = paired(a.inner, b.inner)
            return Ratio(corpus, name, value, target, spread=spread)
        value, spread = paired(a.walls, b.walls)
        return Ratio(corpus, name, value, target, paired(a.cpus, b.cpus)[0], spread)

    on_nn, on_torch = corpus == "nn", corpus == "torch"
    return [
        ratio("flake8 -j1: with plugin / without", with_plugin, without_plugin, "<= 1.05" if on_nn or on_torch else ""),
        *([ratio("tensorconv check / torchfix", default, torchfix, "<= 0.05" if on_nn else "")] if torchfix else []),
        ratio("tensorconv check / ruff --select ALL", default, ruff, "<= 1.00" if on_nn or on_torch else ""),
        ratio("tensorconv check / ast.parse loop", default, ast_loop, "<= 1.00" if on_nn else ""),
        ratio("tensorconv check -j1 / ast.parse loop", serial, ast_loop),
        ratio("engine / libcst parse (trigger files)", engine, libcst, "<= 1.30"),
        ratio(f"speed-up of -j{cores} over -j1", serial, default, ">= 1.70" if on_torch else ""),
        ratio("cached run / first run", second, first, "<= 0.20" if on_torch else ""),
    ]


def _summary(ratios: list[Ratio], cores: int) -> None:
    print(
        f"\nRatios ({cores} cores): the median over rounds of the ratio of wall-clock times within a round,"
        " the range of those, and the same median of CPU times where both sides are processes:"
    )
    for ratio in ratios:
        verdict = {True: "met", False: "NOT MET", None: ""}[ratio.met]
        target = f"target {ratio.target:<8} {verdict}" if ratio.target else ""
        spread = f"[{ratio.spread[0]:.3f}-{ratio.spread[1]:.3f}]" if ratio.spread else ""
        cpu = f"(CPU {ratio.cpu:6.3f}x)" if ratio.cpu is not None else " " * 15
        print(f"  {ratio.corpus:<6} {ratio.name:<42} {ratio.value:8.3f}x {spread:<15} {cpu}  {target}")


def _expect_plugin(bench: Bench, imported: bool) -> None:
    if f"bench: plugin imported: {imported}" not in bench.last_stderr:
        raise SystemExit(f"bench: expected flake8 {'with' if imported else 'without'} this plugin, but: {bench.last_stderr[-500:]}")


def _text(path: str) -> str:
    try:
        return read_source(path).text
    except Exception:  # undecodable: no tool gets far with it either
        return ""


def _installed_torch() -> Path:
    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench: torch is not installed; pass --torch DIR")
    return Path(next(iter(spec.submodule_search_locations)))


def _fetch_dev_corpus() -> Path:
    destination = BENCH / "corpus"
    fetch = ROOT.parent / "shared" / "corpus" / "fetch.sh"
    if not fetch.is_file():
        raise SystemExit(f"bench: {fetch} not found; pass --dev-corpus DIR")
    print(f"bench: fetching the dev corpus into {destination} ...", flush=True)
    subprocess.run(["bash", str(fetch), str(destination)], check=True)
    return destination


def _torchfix_venv() -> Path:
    python = VENV / "bin" / "python"
    if not (VENV / "bin" / "torchfix").exists():
        print(f"bench: installing torchfix into {VENV} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "torchfix", "-c", str(ROOT / "constraints.txt")], check=True
        )
    return python


def _check_plugin_installed() -> None:
    from importlib.metadata import entry_points

    if not any(entry.name == "TCV" for entry in entry_points(group="flake8.extension")):
        raise SystemExit("bench: the flake8 plugin is not installed; run `pip install -e .` first")


def _versions(venv_python: Path) -> str:
    def version(argv: list[str]) -> str:
        result = subprocess.run(argv, capture_output=True, text=True)
        return (result.stdout or result.stderr).strip().splitlines()[0] if result.returncode == 0 else "?"

    flake8 = version([sys.executable, "-m", "flake8", "--version"]).split(" (")[0]
    ruff = version([RUFF, "--version"])
    torchfix = version([str(VENV / "bin" / "torchfix"), "--version"])
    libcst = version([str(venv_python), "-c", "import importlib.metadata as m; print(m.version('libcst'))"])
    return f"flake8 {flake8}, {ruff}, torchfix {torchfix}, libcst {libcst}"


if __name__ == "__main__":
    sys.exit(main())
