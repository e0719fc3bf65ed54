from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from flake8_tensorconv import __version__
from flake8_tensorconv.findings import Position
from flake8_tensorconv.output.report import DOCS_URL, Report, rule_url

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    absolute = os.path.abspath(path)
    try:
        return Path(os.path.relpath(absolute)).as_posix() if not os.path.relpath(absolute).startswith("..") else Path(absolute).as_uri()
    except ValueError:  # another drive on Windows
        return Path(absolute).as_uri()


def _region(start: Position, end: Position) -> dict[str, int]:
    return {"startLine": start.line, "startColumn": start.column + 1, "endLine": end.line, "endColumn": end.column + 1}


def render(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    """A SARIF 2.1.0 log with one run; every rule is described in the driver.

    A notebook's region counts rows from the start of its cell, which the result names in
    ``properties.cell`` and at the start of its message (``cell 4: ...``); its fix is left out,
    since its positions are not positions in the .ipynb file that a SARIF consumer would edit.
    """
    from flake8_tensorconv.rules import ALL_RULES

    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary()},
            "fullDescription": {"text": " ".join(rule.sections().get("Why is this bad?", rule.summary()).split())},
            "help": {"text": rule.documentation(), "markdown": rule.documentation()},
            "helpUri": rule_url(rule.code),
            "defaultConfiguration": {"level": "warning", "enabled": rule.default_enabled},
        }
        for rule in ALL_RULES
    ]
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    results = []
    for report in reports:
        finding = report.finding
        result: dict[str, object] = {
            "ruleId": finding.code,
            "ruleIndex": index.get(finding.code, -1),
            "level": "warning" if finding.code >= "TCV1" else "error",
            "message": {"text": finding.message if finding.cell is None else f"cell {finding.cell}: {finding.message}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(report.path)},
                        "region": _region(finding.start, finding.end),
                    }
                }
            ],
        }
        if finding.related:
            result["relatedLocations"] = [
                {
                    "id": number,
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(related.path or report.path)}, "region": _region(related.start, related.end)
                    },
                    "message": {"text": related.message},
                }
                for number, related in enumerate(finding.related)
            ]
        if finding.cell is not None:
            result["properties"] = {"cell": finding.cell}
        elif finding.fix is not None and report.fix_available(unsafe_fixes):
            result["fixes"] = [
                {
                    "description": {"text": finding.fix.message},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": _uri(report.path)},
                            "replacements": [
                                {"deletedRegion": _region(edit.start, edit.end), "insertedContent": {"text": edit.content}}
                                for edit in finding.fix.edits
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "flake8-tensorconv",
                        "version": __version__,
                        "informationUri": DOCS_URL,
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
