"""The report: predicted beside measured times, the verdicts, a table, a plot.

:func:`compare` sets every algorithm family's predicted time beside its measured one,
:func:`summarize` gives the per-size verdicts and the headline figures, and
:func:`print_report` and :func:`plot_points` show them (rank 0 of ``collsim predict``).

The error of one prediction is ``|predicted / measured - 1|``; the geometric mean error is
``exp(mean |ln(predicted / measured)|) - 1`` (a factor of 1.25 either way counts 25%).
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from .fitting import HostFit

__all__ = ["ERROR_FROM_BYTES", "GOOD_CHOICE", "compare", "describe_fit", "plot_points",
           "print_report", "summarize"]

#: sizes from which the geometric-mean error is reported (the issue's threshold)
ERROR_FROM_BYTES = 64 * 1024
#: a chosen algorithm within this factor of the measured best is a good choice
GOOD_CHOICE = 1.10


def compare(table: Any, sizes: list[int], measured: dict[tuple[int, str, str], float],
            overhead_s: float = 0.0) -> list[dict[str, Any]]:
    """Predicted and measured time of every algorithm family at every size.

    Each family takes the parameters the table predicts fastest; ``overhead_s``, the
    executor's per-call cost, is added to every prediction (it is the same for every
    algorithm, so it changes no choice).

    Parameters
    ----------
    table : TuningTable or HostPredictor
        The predictions: anything whose ``choice(nbytes)`` returns a
        :class:`simulator.Choice` (:func:`simulator.tuning_table`,
        :class:`.predictor.HostPredictor`).
    sizes : list of int
        Message sizes in bytes.
    measured : dict[tuple[int, str, str], float]
        ``measured[(nbytes, algorithm, label)]``: a measured time in seconds (see
        :func:`.measurement.candidate_jobs`).
    overhead_s : float, optional
        Seconds added to every prediction; default 0.

    Returns
    -------
    list of dict
        One per size and family: ``nbytes``, ``algorithm``, ``label``, ``predicted_s``,
        ``measured_s`` and ``chosen`` (whether the table picks this family).

    Raises
    ------
    KeyError
        When ``measured`` lacks a point the table needs.
    """
    from collectives.registry import names

    points = []
    for nbytes in sizes:
        choice = table.choice(nbytes)
        for family in names(composed=False, collective=table.collective):
            best = min((c for c in choice.candidates if c.algorithm == family),
                       key=lambda c: c.predicted_s)
            points.append({"nbytes": nbytes, "algorithm": family, "label": best.label,
                           "predicted_s": overhead_s + best.predicted_s,
                           "measured_s": measured[(nbytes, family, best.label)],
                           "chosen": family == choice.algorithm})
    return points


def summarize(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-size verdicts and the two headline figures (see the module docstring).

    Parameters
    ----------
    points : list of dict
        Points from :func:`compare`; not empty.

    Returns
    -------
    dict[str, Any]
        ``verdicts`` (per size: predicted, measured and chosen best, and whether the
        choice is ``good``), ``geomean_error_from_64KiB`` (None without such sizes),
        ``good_choice_share`` and ``best_matches_share``.
    """
    by_size: dict[int, list[dict[str, Any]]] = {}
    for point in points:
        by_size.setdefault(point["nbytes"], []).append(point)
    verdicts = []
    for nbytes, group in sorted(by_size.items()):
        measured_best = min(group, key=lambda q: q["measured_s"])
        predicted_best = min(group, key=lambda q: q["predicted_s"])
        chosen = next(q for q in group if q["chosen"])
        verdicts.append({"nbytes": nbytes, "predicted_best": predicted_best["algorithm"],
                         "measured_best": measured_best["algorithm"],
                         "chosen": chosen["algorithm"],
                         "good": chosen["measured_s"] <= GOOD_CHOICE * measured_best["measured_s"]})
    logs = [abs(math.log(q["predicted_s"] / q["measured_s"])) for q in points
            if q["nbytes"] >= ERROR_FROM_BYTES and q["predicted_s"] > 0]
    return {"verdicts": verdicts,
            "geomean_error_from_64KiB": math.exp(statistics.mean(logs)) - 1 if logs else None,
            "good_choice_share": sum(v["good"] for v in verdicts) / len(verdicts),
            "best_matches_share": sum(v["predicted_best"] == v["measured_best"]
                                      for v in verdicts) / len(verdicts)}


def describe_fit(fit: HostFit, nranks: int) -> str:
    """One sentence that states every coefficient of ``fit`` in readable units.

    Parameters
    ----------
    fit : HostFit
        A fit from :func:`.fitting.fit_calibration`.
    nranks : int
        Ranks the calibration ran on.

    Returns
    -------
    str
        The sentence.

    Examples
    --------
    >>> fit = HostFit(8e-5, 2e-6, (1e-9,), (4096,), 1e-10, 5e-6, 2e-10, 2, 0.01)
    >>> describe_fit(fit, 4)[:77]
    'calibrated on allgather and reduce_scatter runs, all 4 ranks busy: per call 8'
    """
    copies = ", ".join(f"{1 / beta / 1e9 if beta else math.inf:.2f} GB/s at {n >> 10} KiB"
                       for n, beta in zip(fit.band_bytes, fit.beta_s_per_byte))
    return (f"calibrated on allgather and reduce_scatter runs, all {nranks} ranks busy: per "
            f"call {fit.overhead_s * 1e6:.1f} us + per message {fit.alpha_s * 1e6:.2f} us "
            f"latency and {fit.overhead_s_per_message * 1e6:.2f} us CPU at each end; the "
            f"host ({fit.cores} cores) copies {copies} and reduces "
            f"{fit.gamma_s_per_byte * 1e9:.3f} ns/B, all ranks together, and around the "
            f"schedule copies {fit.copy_s_per_byte * 1e9:.3f} ns/B per core; fit error up to "
            f"{fit.fit_error:.0%}")


def print_report(points: list[dict[str, Any]], summary: dict[str, Any], title: str) -> None:
    """Print ``points`` as a table, size by size with each size's verdict, and the summary.

    Parameters
    ----------
    points : list of dict
        Points from :func:`compare`; not empty.
    summary : dict[str, Any]
        Their :func:`summarize`.
    title : str
        The table's title.
    """
    from rich.table import Table

    from ..terminal import console

    table = Table(title=title)
    for column in ("size (B)", "algorithm", "params", "predicted (us)", "measured (us)",
                   "error"):
        table.add_column(column, justify="right", overflow="fold")
    verdicts = {v["nbytes"]: v for v in summary["verdicts"]}
    last = None
    for q in points:
        if last is not None and q["nbytes"] != last:
            v = verdicts[last]
            table.add_row("", "", "", f"best: {v['predicted_best']}",
                          f"best: {v['measured_best']}", "good" if v["good"] else "BAD")
            table.add_section()
        last = q["nbytes"]
        mark = "*" if q["chosen"] else ""
        table.add_row(str(q["nbytes"]), q["algorithm"] + mark, q["label"],
                      f"{q['predicted_s'] * 1e6:.1f}", f"{q['measured_s'] * 1e6:.1f}",
                      f"{q['predicted_s'] / q['measured_s'] - 1:+.0%}")
    v = verdicts[last]
    table.add_row("", "", "", f"best: {v['predicted_best']}", f"best: {v['measured_best']}",
                  "good" if v["good"] else "BAD")
    out = console()
    out.print(table)
    error = summary["geomean_error_from_64KiB"]
    out.print(f"geomean error, sizes >= 64 KiB: "
                  f"{'n/a' if error is None else f'{error:.1%}'}; chosen (*) within 10% of "
                  f"the measured best: {summary['good_choice_share']:.0%} of sizes; "
                  f"predicted best = measured best: {summary['best_matches_share']:.0%}")


def plot_points(points: list[dict[str, Any]], path: Path, title: str) -> None:
    """Draw measured (solid) and predicted (dashed) time against size, per family, as a PNG.

    Parameters
    ----------
    points : list of dict
        Points from :func:`compare`.
    path : pathlib.Path
        The PNG to write.
    title : str
        The plot's title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for i, family in enumerate(dict.fromkeys(q["algorithm"] for q in points)):
        mine = [q for q in points if q["algorithm"] == family]
        sizes = [q["nbytes"] for q in mine]
        color = f"C{i}"
        ax.plot(sizes, [q["measured_s"] * 1e6 for q in mine], "o-", color=color,
                label=f"{family} measured")
        ax.plot(sizes, [q["predicted_s"] * 1e6 for q in mine], "--", color=color,
                label=f"{family} predicted")
    ax.set(xscale="log", yscale="log", xlabel="size (bytes)", ylabel="time (us)", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
