"""Busbw against size per algorithm, measured and predicted, with the crossovers marked.

Drawn with matplotlib's Agg back end (no display needed) into a PNG.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from simulator.busbw import bus_factor

from .report import measured_best

__all__ = ["crossovers", "plot_busbw"]


def crossovers(sizes: Sequence[int], best: Sequence[str]) -> list[tuple[int, str, str]]:
    """Where the best algorithm changes along increasing ``sizes``.

    Parameters
    ----------
    sizes : Sequence[int]
        Message sizes in bytes, increasing.
    best : Sequence[str]
        The best algorithm at each size.

    Returns
    -------
    list of (size, before, after)
        ``size`` is the first size at which ``after`` wins.

    Raises
    ------
    ValueError
        If ``sizes`` and ``best`` differ in length.

    Examples
    --------
    >>> crossovers([8, 64, 512, 4096], ["rhd", "rhd", "ring", "ring"])
    [(512, 'rhd', 'ring')]
    """
    if len(sizes) != len(best):
        raise ValueError(f"sizes has {len(sizes)} entries but best has {len(best)}")
    return [(sizes[i], best[i - 1], best[i]) for i in range(1, len(best))
            if best[i] != best[i - 1]]


def _series(doc: dict[str, Any]) -> dict[str, tuple[list[int], list[float]]]:
    series: dict[str, tuple[list[int], list[float]]] = {}
    for row in doc["rows"]:
        if row["size_B"] > 0:
            sizes, busbw = series.setdefault(row["algorithm"], ([], []))
            sizes.append(row["size_B"])
            busbw.append(row["out_of_place"]["busbw_GBps"])
    return series


def _predicted(doc: dict[str, Any]) -> dict[str, tuple[list[int], list[float]]]:
    factor = bus_factor(doc["collective"], doc["nranks"])
    series: dict[str, tuple[list[int], list[float]]] = {}
    for entry in doc["predicted"]:
        for name, time_us in entry["time_us"].items():
            if entry["size_B"] > 0 and time_us > 0:
                sizes, busbw = series.setdefault(name, ([], []))
                sizes.append(entry["size_B"])
                busbw.append(entry["size_B"] / time_us / 1e3 * factor)
    return series


def _mark(axes: Any, marks: list[tuple[int, str, str]], style: str, y: float) -> None:
    for size, before, after in marks:
        axes.axvline(size, color="0.4", linestyle=style, linewidth=0.8)
        axes.annotate(f"{before}\u2192{after}", (size, y), xycoords=("data", "axes fraction"),
                      rotation=90, fontsize=7, ha="right", va="top", color="0.3")


def plot_busbw(doc: dict[str, Any], path: str | Path, title: str | None = None) -> Path:
    """Draw a benchmark document's busbw per algorithm and save it as a PNG.

    Measured out-of-place busbw is drawn solid with markers, the model's prediction
    (when the document has one) dashed in the same colour; vertical lines mark where the
    measured best algorithm changes (solid) and where the predicted one does (dotted).

    Parameters
    ----------
    doc : dict
        A document from :func:`collsim.bench.report.document` or ``--json``.
    path : str or Path
        The PNG to write.
    title : str, optional
        Defaults to the collective, ranks, dtype and transport.

    Returns
    -------
    Path
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 5.5))
    colours: dict[str, Any] = {}
    for name, (sizes, busbw) in _series(doc).items():
        (line,) = axes.plot(sizes, busbw, marker="o", markersize=3, label=f"{name} (measured)")
        colours[name] = line.get_color()
    for name, (sizes, busbw) in _predicted(doc).items():
        axes.plot(sizes, busbw, linestyle="--", color=colours.get(name),
                  label=f"{name} (predicted)")
    best = measured_best(doc)
    sizes = [size for size in best if size > 0]
    _mark(axes, crossovers(sizes, [best[size] for size in sizes]), "-", 0.98)
    predicted = [entry for entry in doc["predicted"] if entry["size_B"] > 0]
    _mark(axes, crossovers([e["size_B"] for e in predicted], [e["best"] for e in predicted]),
          ":", 0.6)
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("size (bytes)")
    axes.set_ylabel("bus bandwidth (GB/s)")
    axes.set_title(title or f"{doc['collective']} on {doc['nranks']} ranks, {doc['dtype']}, "
                   f"{doc['transport']}/{doc['buffer']}"
                   + (f"; predicted on {doc['topology']}" if doc["topology"] else ""))
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize=7, ncol=2, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)
