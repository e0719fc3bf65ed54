"""GitLab Code Quality: a JSON array of issues (description, check_name, fingerprint, severity, location)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence

from flake8_tensorconv.output.report import Report


def _path(path: str) -> str:
    """Relative to the project folder, as GitLab links it (``CI_PROJECT_DIR`` in a job, else the current folder)."""
    base = os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    relative = os.path.relpath(os.path.abspath(path), base)
    return (os.path.abspath(path) if relative.startswith("..") else relative).replace(os.sep, "/")


def render(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    issues = []
    seen: dict[str, int] = {}
    for report in reports:
        finding = report.finding
        path = _path(report.path)
        # Stable across edits elsewhere in the file (no line number); a counter tells repeats apart.
        key = f"{path}\0{finding.code}\0{finding.message}"
        seen[key] = seen.get(key, 0) + 1
        fingerprint = hashlib.sha256(f"{key}\0{seen[key]}".encode()).hexdigest()[:32]
        issues.append(
            {
                "description": f"{finding.code} {finding.message}",
                "check_name": finding.code,
                "fingerprint": fingerprint,
                "severity": "critical" if finding.code < "TCV1" else "major",
                "location": {"path": path, "lines": {"begin": finding.start.line, "end": finding.end.line}},
            }
        )
    return json.dumps(issues, indent=2) + "\n"
