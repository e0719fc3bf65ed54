"""The ``tensorconv`` command: argument parsing and printing; the work happens elsewhere."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from flake8_tensorconv import __version__
from flake8_tensorconv.config import FIX_STYLES, ConfigError, Overrides, Resolver, split_codes

if TYPE_CHECKING:
    from flake8_tensorconv.output.progress import ProgressBar
    from flake8_tensorconv.runner import FileResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PROGRESS_MIN_FILES = 50  # fewer files than this never get a progress bar
OUTPUT_FORMATS = ("text", "json", "sarif", "github", "gitlab")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"tensorconv: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tensorconv", description="Lint and fix PyTorch <-> NumPy conversions.")
    parser.add_argument("--version", action="version", version=f"tensorconv {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = commands.add_parser("check", help="lint files or folders (default: the current folder)")
    check.add_argument("paths", nargs="*", metavar="PATH", default=None, help="files or folders; `-` reads the source from stdin")
    fixing = check.add_argument_group("fixes")
    fixing.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    fixing.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes (with --fix or --diff)")
    fixing.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    fixing.add_argument("--fix-style", choices=FIX_STYLES, help="detach-cpu (default): .detach().cpu().numpy(); force: .numpy(force=True)")
    fixing.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` to each line with a finding (merged into an existing noqa comment)")
    fixing.add_argument("--fix-read-only", action="store_true", help="let --fix and --add-noqa rewrite files without write permission (they keep their mode)")
    fixing.add_argument("--exit-non-zero-on-fix", action="store_true", help="exit 1 when --fix changed a file, even if no finding remains")
    rules = check.add_argument_group("rules")
    rules.add_argument("--select", metavar="CODES", help="comma-separated code prefixes to enable (replaces the default)")
    rules.add_argument("--extend-select", metavar="CODES", help="code prefixes to enable in addition")
    rules.add_argument("--ignore", metavar="CODES", help="code prefixes to disable")
    files = check.add_argument_group("files")
    files.add_argument(
        "--config", metavar="FILE", help="a pyproject.toml or .tensorconv.toml that applies to every file (default: the nearest one above each file)"
    )
    files.add_argument("--exclude", metavar="GLOBS", help="comma-separated globs to skip, replacing the defaults (.git, .venv, build, ...)")
    files.add_argument("--extend-exclude", metavar="GLOBS", help="comma-separated globs to skip in addition to the defaults")
    files.add_argument(
        "--respect-gitignore", action=argparse.BooleanOptionalAction, default=None,
        help="skip what .gitignore, .ignore and .git/info/exclude ignore (default: on)",
    )
    files.add_argument(
        "--force-exclude", action=argparse.BooleanOptionalAction, default=None,
        help="apply the excludes to files named on the command line too (for pre-commit)",
    )
    files.add_argument("--stdin-filename", metavar="PATH", help="the name of the source read from stdin: its config, per-file ignores and reports")
    files.add_argument(
        "--no-default-path",
        action="store_true",
        help="with no PATH, check nothing instead of the current folder (for hooks that pass file names)",
    )
    output = check.add_argument_group("output")
    output.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text")
    output.add_argument("--output-file", metavar="FILE", help="write the findings to FILE instead of stdout")
    output.add_argument("--statistics", action="store_true", help="print how many findings each code has instead of the findings")
    output.add_argument("--show-fixes", action="store_true", help="with --fix, list the fixes applied in each file")
    output.add_argument("--show-files", action="store_true", help="print the files that would be checked, and stop")
    output.add_argument("--show-settings", action="store_true", help="print the settings that apply to the first file given, and where they come from")
    output.add_argument("-q", "--quiet", action="store_true", help="print the findings and errors, no summary and no warnings")
    output.add_argument("-s", "--silent", action="store_true", help="print only errors; the exit status still says whether findings remain")
    output.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    run = check.add_argument_group("run")
    run.add_argument("-j", "--jobs", type=int, metavar="N", help="files checked in parallel (default: all cores)")
    run.add_argument("--no-cache", action="store_true", help="neither read nor write the cache in .tensorconv_cache/")

    rule = commands.add_parser("rule", help="explain a rule")
    rule.add_argument("code", nargs="?", metavar="CODE")
    rule.add_argument("--all", action="store_true", help="explain every rule")
    rule.set_defaults(subparser=rule)

    verify = commands.add_parser("verify", help="run every rule's runtime claim on the installed torch (needs torch and NumPy)")
    verify.add_argument(
        "--device", metavar="DEVICES",
        help="comma-separated: cpu, cuda, meta (default: all three, cuda skipped without a GPU; named, a missing one is an error)",
    )
    verify.add_argument("--select", metavar="CODES", help="comma-separated code prefixes of the rules to verify (default: all)")
    server = commands.add_parser("server", help="run the language server on stdin/stdout (needs the 'server' extra)")
    # Clients built on vscode-languageclient add --stdio; stdio is the only transport.
    server.add_argument("--stdio", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args)
        if args.command == "verify":
            return _verify(args)
        if args.command == "server":
            from flake8_tensorconv.server import main as serve

            return serve()
    except ConfigError as error:
        print(f"tensorconv: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    parser.print_help(sys.stderr)
    return EXIT_ERROR


def make_resolver(args: argparse.Namespace) -> Resolver:
    overrides = Overrides(
        select=split_codes(args.select) if args.select else None,
        extend_select=split_codes(args.extend_select),
        ignore=split_codes(args.ignore),
        fix_style=args.fix_style,
        exclude=_globs(args.exclude) if args.exclude is not None else None,
        extend_exclude=_globs(args.extend_exclude),
        respect_gitignore=args.respect_gitignore,
        force_exclude=args.force_exclude,
    )
    return Resolver(overrides, args.config)


def _globs(text: str | None) -> tuple[str, ...]:
    return tuple(glob.strip() for glob in (text or "").split(",") if glob.strip())


def _usage_conflicts(args: argparse.Namespace, stdin: bool) -> str | None:
    if args.add_noqa and (args.fix or args.diff):
        return "--add-noqa cannot be combined with --fix or --diff"
    if args.add_noqa and stdin:
        return "--add-noqa rewrites files; it cannot read from stdin"
    if stdin and len(args.paths) > 1:
        return "`-` (stdin) cannot be combined with other paths"
    if args.statistics and args.output_format not in ("text", "json"):
        return "--statistics prints text or json only"
    if args.jobs is not None and args.jobs < 1:
        return "--jobs must be at least 1"
    return None


def _check(args: argparse.Namespace) -> int:
    # Parsing makes many objects and few reference cycles (trees are freed by reference
    # counting): collecting garbage a tenth as often saves about 6 % of the work.
    gc.set_threshold(10_000, 10, 10)
    stdin = "-" in args.paths or (not args.paths and args.stdin_filename is not None)
    conflict = _usage_conflicts(args, stdin)
    if conflict:
        print(f"tensorconv: error: {conflict}", file=sys.stderr)
        return EXIT_ERROR
    resolver = make_resolver(args)
    if args.show_settings:
        return _show_settings(args, resolver)
    if stdin:
        return _check_stdin(args, resolver)

    from flake8_tensorconv.files import discover
    from flake8_tensorconv.runner import Mode, check_files, default_jobs

    paths = args.paths or ([] if args.no_default_path else ["."])
    discovery = discover(paths, resolver)
    status = EXIT_CLEAN
    for missing in discovery.missing:
        print(f"tensorconv: error: {missing}: no such file or directory", file=sys.stderr)
        status = EXIT_ERROR
    for error in discovery.errors:
        print(f"tensorconv: error: {error}", file=sys.stderr)
        status = EXIT_ERROR
    if args.show_files:
        sys.stdout.write("".join(f"{path}\n" for path in sorted(discovery.files)))
        return status
    if paths and not discovery.files and not status and not (args.quiet or args.silent):
        print("tensorconv: warning: No Python files found under the given path(s)", file=sys.stderr)

    mode = Mode(
        fix=args.fix and not args.diff, unsafe_fixes=args.unsafe_fixes, diff=args.diff,
        add_noqa=args.add_noqa, fix_read_only=args.fix_read_only,
    )
    cache = None
    if not args.no_cache:
        from flake8_tensorconv.cache import Cache, project_root

        cache = Cache(project_root(args.config), resolver.config_for(os.getcwd()).settings)
    progress = _progress_bar(len(discovery.files), args)
    try:
        results = check_files(discovery.files, resolver.settings_for, mode, args.jobs or default_jobs(), cache, progress)
    finally:
        if progress is not None:
            progress.close()
    if cache is not None and cache.write_error:
        _warn(args, f"{cache.write_error} (--no-cache turns the cache off)")
    return _report(args, results, status)


def _report(args: argparse.Namespace, results: Sequence[FileResult], status: int, out: TextIO | None = None) -> int:
    """Print what the results say (findings, diff, statistics, summary); the exit status."""
    from flake8_tensorconv.output import Report, formatter
    from flake8_tensorconv.output import summary as summaries

    reports: list[Report] = []
    fixed_by_file: dict[str, dict[str, int]] = {}
    fixed = added = 0
    for result in results:
        if result.error:
            print(f"tensorconv: error: {result.path}: {result.error}", file=sys.stderr)
            status = EXIT_ERROR
        for warning in result.warnings:
            _warn(args, warning)
        for dropped in result.dropped_fixes:
            cell = f"cell {dropped.cell}:" if dropped.cell is not None else ""
            where = f"{result.path}:{cell}{dropped.start.line}:{dropped.start.column + 1}"
            _warn(args, f"{where}: the {dropped.code} fix was dropped because its result does not parse")
        fixed += result.fixed
        added += result.noqa_added
        if result.fixed_codes:
            fixed_by_file[result.path] = result.fixed_codes
        reports.extend(Report(result.path, finding) for finding in result.findings)

    if args.add_noqa:
        for report in reports:  # a file that does not parse (TCV001) takes no noqa comment
            finding = report.finding
            _warn(args, f"{report.path}:{finding.start.line}:{finding.start.column + 1}: {finding.code} {finding.message}; no noqa comment added")
        _say(args, f"Added {added} noqa directive{'' if added == 1 else 's'}.")
        return status

    if args.diff:
        status = _write_output(args, "".join(result.diff for result in results), status, out)
        changed = sum(1 for result in results if result.diff)
        _say(args, summaries.diff_summary(reports, fixed, args.unsafe_fixes))
        return status if status else (EXIT_FINDINGS if changed else EXIT_CLEAN)

    if not args.silent:
        if args.statistics:
            render = summaries.statistics_json if args.output_format == "json" else summaries.statistics
            text = render(reports, args.unsafe_fixes)
        else:
            text = formatter(args.output_format)(reports, args.unsafe_fixes)
        status = _write_output(args, text, status, out)
        if args.show_fixes and fixed_by_file:
            sys.stderr.write(summaries.fix_summary(fixed_by_file))
    if args.output_format == "text" and status == EXIT_CLEAN and results:
        _say(args, summaries.summary(reports, fixed, args.unsafe_fixes).rstrip("\n"))
    if status:
        return status
    if args.exit_non_zero_on_fix and fixed and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if reports and not args.exit_zero else EXIT_CLEAN


def _write_output(args: argparse.Namespace, text: str, status: int, out: TextIO | None) -> int:
    if not args.output_file:
        (out or sys.stdout).write(text)
        return status
    try:
        folder = os.path.dirname(args.output_file)
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(args.output_file, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        print(f"tensorconv: error: {args.output_file}: cannot write the output: {error.strerror or error}", file=sys.stderr)
        return EXIT_ERROR
    return status


def _say(args: argparse.Namespace, message: str) -> None:
    if not (args.quiet or args.silent):
        print(message, file=sys.stderr)


def _warn(args: argparse.Namespace, message: str) -> None:
    _say(args, f"tensorconv: warning: {message}")


def _check_stdin(args: argparse.Namespace, resolver: Resolver) -> int:
    """``check -``: the source comes on stdin and is named ``--stdin-filename`` (else ``-``).

    With ``--fix`` the fixed source (or the source, unchanged) goes to stdout and the
    findings to stderr; otherwise the findings go to stdout as for files.
    """
    from flake8_tensorconv.files import is_forced_out
    from flake8_tensorconv.runner import FileResult, Mode, check_stdin

    raw = sys.stdin.buffer.read()
    path = args.stdin_filename or "-"
    settings_path = path if args.stdin_filename else os.path.join(os.getcwd(), "-")
    settings = resolver.settings_for(settings_path)
    fix = args.fix and not args.diff
    if args.stdin_filename and is_forced_out(path, resolver):
        result, output = FileResult(path=path), raw
    else:
        result, output = check_stdin(raw, path, settings, Mode(fix=fix, unsafe_fixes=args.unsafe_fixes, diff=args.diff))
    if fix:
        sys.stdout.buffer.write(output)
        sys.stdout.flush()
        return _report(args, [result], EXIT_CLEAN, out=sys.stderr)
    return _report(args, [result], EXIT_CLEAN)


def _show_settings(args: argparse.Namespace, resolver: Resolver) -> int:
    from flake8_tensorconv.config import describe
    from flake8_tensorconv.files import discover

    paths = [path for path in args.paths if path != "-"] or ([args.stdin_filename] if args.stdin_filename else ["."])
    target = paths[0]
    if os.path.isdir(target):
        found = discover([target], resolver).files
        target = found[0] if found else target
    sys.stdout.write(describe(resolver.config_for(target), target))
    return EXIT_CLEAN


def _progress_bar(total: int, args: argparse.Namespace) -> ProgressBar | None:
    """A progress bar on stderr for a run that takes a while, only on a terminal (tqdm, imported only then)."""
    if args.quiet or args.silent or total < PROGRESS_MIN_FILES or not sys.stderr.isatty():
        return None
    from flake8_tensorconv.output.progress import ProgressBar

    return ProgressBar(total)


def _rule(args: argparse.Namespace) -> int:
    from flake8_tensorconv.docs import explain
    from flake8_tensorconv.rules import ALL_RULES, RULES_BY_CODE

    if args.all:
        sys.stdout.write("\n".join(explain(rule) for rule in ALL_RULES))
        return EXIT_CLEAN
    if not args.code:
        args.subparser.error("give a rule code (such as TCV101) or --all")
    rule = RULES_BY_CODE.get(args.code.upper())
    if rule is None:
        print(f"tensorconv: error: unknown rule {args.code!r}; `tensorconv rule --all` lists them", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(explain(rule))
    return EXIT_CLEAN


def _verify(args: argparse.Namespace) -> int:
    from flake8_tensorconv.examples import DEVICES
    from flake8_tensorconv.verify.command import parse_devices, run_verify

    devices = parse_devices(args.device) if args.device is not None else DEVICES
    return run_verify(devices, split_codes(args.select), required=args.device is not None)
