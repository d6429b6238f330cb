"""Gantt charts of a simulation: one row per rank or per link, one bar per transfer."""

from __future__ import annotations

from pathlib import Path
from reprlib import repr as brief

from .engine import SimulationResult

__all__ = ["plot_timeline"]

_BY = ("rank", "link")


def plot_timeline(result: SimulationResult, path: str | Path, by: str = "rank",
                  title: str = "", max_rows: int = 64) -> Path:
    """Draw ``result``'s transfers as a Gantt chart and save it as a PNG.

    Parameters
    ----------
    result : SimulationResult
        A simulation run with ``trace=True``.
    path : str or Path
        Where to write the PNG.
    by : {"rank", "link"}
        One row per sending rank (bars from post to arrival, coloured by destination) or
        per link (bars over the transfer's lifetime on every link of its route).
    title : str
        Figure title.
    max_rows : int
        Rows drawn at most (the first ones), to keep big runs readable.

    Returns
    -------
    Path
        ``path``.
    """
    if by not in _BY:
        raise ValueError(f"by={brief(by)} is not supported; choose one of {list(_BY)}")
    if not result.transfers and result.transfer_count:
        raise ValueError("result has no trace; simulate with trace=True")
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    bars: dict[int, list[tuple[float, float, int]]] = {}
    for t in result.transfers:
        for row in (t.src,) if by == "rank" else t.links:
            bars.setdefault(row, []).append((t.start_s * 1e6, (t.end_s - t.start_s) * 1e6, t.dst))
    rows = sorted(bars)[:max_rows]
    fig, ax = plt.subplots(figsize=(10, 1.5 + 0.25 * len(rows)))
    cmap = plt.get_cmap("tab20")
    for y, row in enumerate(rows):
        spans = bars[row]
        ax.broken_barh([(s, w) for s, w, _ in spans], (y - 0.4, 0.8),
                       facecolors=[cmap(d % 20) for _, _, d in spans], edgecolor="black",
                       linewidth=0.2)
    ax.set_yticks(range(len(rows)), [f"{by} {r}" for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    ax.set_title(title or f"{len(result.transfers)} transfers, {result.time_s * 1e6:.1f} us")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
