"""Write scripts/gpu_check.sh's report: markdown tables from its steps' logs, on stdout.

``python3 scripts/gpu_check_report.py LOGS STANDIN STATUS COMMAND``: ``LOGS`` holds
``steps.tsv`` (name, exit status or why skipped, seconds, log file per step), the logs, and
the GPU tests' JUnit XML (``gpu-tests-*.xml``); ``STANDIN`` is ``1`` for a run without a GPU; ``STATUS`` the
check's exit status; ``COMMAND`` the command line, printed on top with the date and host.
"""

from __future__ import annotations

import json
import socket
import sys
import xml.etree.ElementTree as ElementTree
from datetime import datetime, timezone
from pathlib import Path


def steps(logs: Path) -> list[tuple[str, str, str, Path]]:
    """``(name, outcome, seconds, log)`` per step, in the order they ran."""
    out = []
    for line in (logs / "steps.tsv").read_text().splitlines():
        name, outcome, seconds, log = line.split("\t")
        out.append((name, outcome, seconds, Path(log)))
    return out


def step_table(rows: list[tuple[str, str, str, Path]]) -> list[str]:
    """Each step's outcome (``passed``, ``FAILED (exit n)``, or why it was skipped)."""
    out = ["| step | result | seconds |", "|---|---|---|"]
    for name, outcome, seconds, _ in rows:
        shown = ("passed" if outcome == "0" else f"FAILED (exit {outcome})"
                 if outcome.isdigit() else outcome)
        out.append(f"| {name} | {shown} | {seconds} |")
    return out


def test_table(xmls: list[Path]) -> list[str]:
    """Each GPU test's outcome and time, from pytest's JUnit XML files."""
    if not xmls:
        return ["(no JUnit report: pytest did not finish, see the steps)"]
    out = ["| test | outcome | seconds |", "|---|---|---|"]
    cases = [case for xml in xmls for case in ElementTree.parse(xml).getroot().iter("testcase")]
    for case in cases:
        outcome = "passed"
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                message = (found.get("message") or "").splitlines()[0][:160] if \
                    found.get("message") else ""
                outcome = f"{kind}: {message}".replace("|", "/")
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        out.append(f"| {name} | {outcome} | {float(case.get('time', 0)):.1f} |")
    return out


def stream_table(rows: list[tuple[str, str, str, Path]]) -> list[str]:
    """The stream-order workers' summaries."""
    out = ["| run | ranks | cases | failures |", "|---|---|---|---|"]
    for name, _, _, log in rows:
        if not name.startswith("stream order"):
            continue
        summaries = [json.loads(line[len("SUMMARY "):]) for line in log.read_text().splitlines()
                     if line.startswith("SUMMARY ")]
        if not summaries:
            out.append(f"| {name} | - | - | no summary (see the step) |")
        for summary in summaries:
            failures = "; ".join(summary["failures"][:3]).replace("|", "/") or "none"
            out.append(f"| {summary['transport']} on {summary['xp']} | {summary['nranks']} | "
                       f"{summary['cases']} | {failures} |")
    return out


def timing_sections(rows: list[tuple[str, str, str, Path]]) -> list[str]:
    """The benchmarks' markdown tables, each under its step's name."""
    out = []
    for name, outcome, _, log in rows:
        if not name.startswith("time per call"):
            continue
        lines = log.read_text().splitlines()
        table = [line for line in lines if line.startswith("|")]
        title = next((line for line in lines if line.strip() and not line.startswith("|")
                      and not line.startswith("=")), "")
        out += [f"### {name}", ""]
        out += [title, "", *table] if table else [f"(no table: {outcome})"]
        out.append("")
    return out


def main() -> None:
    logs, standin, status, command = Path(sys.argv[1]), sys.argv[2] == "1", sys.argv[3], \
        sys.argv[4]
    rows = steps(logs)
    versions = next((log for name, _, _, log in rows if name == "versions"), None)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# GPU check", "", f"`{command}`, {when}, on `{socket.gethostname()}`.", ""]
    if standin:
        out += ["**Stand-in run (GPU_CHECK_STANDIN=1): NumPy over MPI, no GPU; not a GPU "
                "result.**", ""]
    out += [f"Result: **{'PASSED' if status == '0' else 'FAILED'}**", "", "## Versions", ""]
    out += [line for line in versions.read_text().splitlines() if line.startswith("|")] \
        if versions is not None else ["(not asked)"]
    out += ["", "## Steps", "", *step_table(rows), "", "## GPU tests", "",
            *test_table(sorted(logs.glob("gpu-tests-*.xml"))), "", "## Stream order", "",
            *stream_table(rows), "", "## Time per call", "", *timing_sections(rows)]
    print("\n".join(out))


if __name__ == "__main__":
    main()
