"""The ``tensorconv`` command: argument parsing and printing; the work happens elsewhere."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence

from flake8_tensorconv import __version__
from flake8_tensorconv.config import (
    FIX_STYLES,
    ConfigError,
    Settings,
    find_pyproject,
    load_pyproject,
    settings_from_table,
    split_codes,
)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"tensorconv: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tensorconv", description="Lint and fix PyTorch <-> NumPy conversions.")
    parser.add_argument("--version", action="version", version=f"tensorconv {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = commands.add_parser("check", help="lint files or folders (default: the current folder)")
    check.add_argument("paths", nargs="*", metavar="PATH", default=None)
    check.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    check.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes (with --fix or --diff)")
    check.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    check.add_argument("--select", metavar="CODES", help="comma-separated code prefixes to enable (replaces the default)")
    check.add_argument("--extend-select", metavar="CODES", help="code prefixes to enable in addition")
    check.add_argument("--ignore", metavar="CODES", help="code prefixes to disable")
    check.add_argument("--output-format", choices=("text", "json", "sarif", "github"), default="text")
    check.add_argument("--fix-style", choices=FIX_STYLES, help="detach-cpu (default): .detach().cpu().numpy(); force: .numpy(force=True)")
    check.add_argument("-j", "--jobs", type=int, metavar="N", help="files checked in parallel (default: all cores)")
    check.add_argument("--config", metavar="PYPROJECT", help="pyproject.toml to read [tool.tensorconv] from (default: the nearest one)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    check.add_argument("--no-cache", action="store_true", help="neither read nor write the cache in .tensorconv_cache/")
    check.add_argument(
        "--no-default-path",
        action="store_true",
        help="with no PATH, check nothing instead of the current folder (for hooks that pass file names)",
    )

    rule = commands.add_parser("rule", help="explain a rule")
    rule.add_argument("code", nargs="?", metavar="CODE")
    rule.add_argument("--all", action="store_true", help="explain every rule")

    verify = commands.add_parser("verify", help="run every rule's runtime claim on the installed torch (needs torch and NumPy)")
    verify.add_argument("--device", default="cpu,cuda,meta", metavar="DEVICES", help="comma-separated: cpu, cuda, meta (default: all three)")
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
            return _rule(args, parser)
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


def load_settings(args: argparse.Namespace) -> Settings:
    path = args.config or find_pyproject(os.getcwd())
    if args.config and not os.path.isfile(args.config):
        raise ConfigError(f"{args.config}: no such file")
    base = settings_from_table(load_pyproject(path), path) if path else Settings()
    settings = Settings(
        select=split_codes(args.select) if args.select else base.select,
        extend_select=base.extend_select + split_codes(args.extend_select),
        ignore=base.ignore + split_codes(args.ignore),
        per_file_ignores=base.per_file_ignores,
        fix_style=args.fix_style or base.fix_style,
        target_torch=base.target_torch,
    )
    _validate(settings)
    return settings


def _validate(settings: Settings) -> None:
    from flake8_tensorconv.rules import RULES_BY_CODE

    for prefix in (*settings.select, *settings.extend_select, *settings.ignore):
        if prefix != "ALL" and not any(code.startswith(prefix) for code in RULES_BY_CODE):
            raise ConfigError(f"unknown rule selector {prefix!r} (codes look like TCV101; `tensorconv rule --all` lists them)")
    if settings.fix_style == "force" and settings.target_torch and _version_tuple(settings.target_torch) < (1, 13):
        raise ConfigError(f"fix-style 'force' needs torch 1.13+ (`numpy(force=True)`), but target-torch is {settings.target_torch}")


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _check(args: argparse.Namespace) -> int:
    from flake8_tensorconv.files import discover
    from flake8_tensorconv.output import Report, formatter
    from flake8_tensorconv.runner import Mode, check_files, default_jobs

    # Parsing makes many objects and few reference cycles (trees are freed by reference
    # counting): collecting garbage a tenth as often saves about 6 % of the work.
    gc.set_threshold(10_000, 10, 10)
    settings = load_settings(args)
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    discovery = discover(args.paths or ([] if args.no_default_path else ["."]))
    status = EXIT_CLEAN
    for missing in discovery.missing:
        print(f"tensorconv: error: {missing}: no such file or directory", file=sys.stderr)
        status = EXIT_ERROR
    mode = Mode(fix=args.fix and not args.diff, unsafe_fixes=args.unsafe_fixes, diff=args.diff)
    cache = None
    if not args.no_cache:
        from flake8_tensorconv.cache import Cache, project_root

        cache = Cache(project_root(args.config), settings)
    results = check_files(discovery.files, settings, mode, args.jobs or default_jobs(), cache)
    if cache is not None and cache.write_error:
        print(f"tensorconv: warning: {cache.write_error} (--no-cache turns the cache off)", file=sys.stderr)

    reports: list[Report] = []
    fixed = 0
    for result in results:
        if result.error:
            print(f"tensorconv: error: {result.path}: {result.error}", file=sys.stderr)
            status = EXIT_ERROR
        for dropped in result.dropped_fixes:
            cell = f"cell {dropped.cell}:" if dropped.cell is not None else ""
            print(
                f"tensorconv: warning: {result.path}:{cell}{dropped.start.line}:{dropped.start.column + 1}: "
                f"the {dropped.code} fix was dropped because its result does not parse",
                file=sys.stderr,
            )
        fixed += result.fixed
        reports.extend(Report(result.path, finding) for finding in result.findings)

    if args.diff:
        sys.stdout.write("".join(result.diff for result in results))
        changed = sum(1 for result in results if result.diff)
        print(f"{fixed} fix(es) would be applied to {changed} file(s).", file=sys.stderr)
        return status if status else (EXIT_FINDINGS if changed else EXIT_CLEAN)

    sys.stdout.write(formatter(args.output_format)(reports, args.unsafe_fixes))
    if args.output_format == "text" and status == EXIT_CLEAN:
        _summary(reports, fixed, args)
    if status:
        return status
    return EXIT_FINDINGS if reports and not args.exit_zero else EXIT_CLEAN


def _summary(reports: Sequence[object], fixed: int, args: argparse.Namespace) -> None:
    from flake8_tensorconv.findings import Applicability

    if fixed:
        print(f"Fixed {fixed} finding(s).", file=sys.stderr)
    if not reports:
        if not fixed:
            print("All checks passed.", file=sys.stderr)
        return
    findings = [report.finding for report in reports]  # type: ignore[attr-defined]
    print(f"Found {len(findings)} finding(s).", file=sys.stderr)
    safe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.UNSAFE)
    if safe and not args.fix:
        print(f"[*] {safe} fixable with `tensorconv check --fix`.", file=sys.stderr)
    if unsafe and not args.unsafe_fixes:
        print(f"{unsafe} more fixable with `--fix --unsafe-fixes` (review them: they can change behaviour).", file=sys.stderr)


def _rule(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from flake8_tensorconv.docs import explain
    from flake8_tensorconv.rules import ALL_RULES, RULES_BY_CODE

    if args.all:
        sys.stdout.write("\n".join(explain(rule) for rule in ALL_RULES))
        return EXIT_CLEAN
    if not args.code:
        parser.parse_args(["rule", "--help"])
    rule = RULES_BY_CODE.get(args.code.upper())
    if rule is None:
        print(f"tensorconv: error: unknown rule {args.code!r}; `tensorconv rule --all` lists them", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(explain(rule))
    return EXIT_CLEAN


def _verify(args: argparse.Namespace) -> int:
    from flake8_tensorconv.verify.command import parse_devices, run_verify

    return run_verify(parse_devices(args.device), split_codes(args.select))
