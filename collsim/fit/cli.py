"""``collsim fit``: fit the GPU model to a cluster's nccl-tests output, or score a machine on it.

``collsim fit LOG [LOG ...] --output cluster.toml`` reads ``all_reduce_perf`` output
(printed, or ``-J`` JSON; :mod:`collsim.fit.logs`), fits the preset of its GPU to it
(:mod:`collsim.fit.figures`), prints every figure against the preset's, the residual per
size and the figures the logs could not determine, and writes a topology file (the DGX
preset of the log's node count, or ``--nodes``, with the fitted ``[gpu]`` table) that
``collsim simulate``, ``collsim select`` and :func:`simulator.select` take.

``collsim fit --machine cluster.toml --check LOG2`` predicts ``LOG2`` on a machine (a file
``fit`` wrote, or ``dgx-h100`` / ``dgx-a100`` for the unfitted preset) at ``LOG2``'s node
count, algorithm and protocol, as ``benchmarks/bench_fidelity.py`` predicts the published
curves, and ends with ``geomean G% (<1MiB S%, >=64MiB L%)``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from rich.table import Table

import topology
from simulator.fidelity import Curve, Score
from simulator.gpu import SETTINGS

from ..args import MAX_NODES, UsageError, check_output, whole
from ..terminal import console
from .figures import FIGURES, NCCL_ALGOS, NCCL_PROTOS, Fit, check, curve_of, fit, preset_of
from .logs import LogError, read_log

__all__ = ["add_arguments", "main"]

#: ``--machine`` names of the unfitted presets -> GPU
_PRESETS = {"dgx-h100": "H100", "dgx-a100": "A100"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("logs", nargs="*", metavar="LOG",
                        help="nccl-tests all_reduce_perf output (printed, or -J JSON) to fit")
    parser.add_argument("--output", type=Path, metavar="FILE",
                        help="write the fitted machine here (a topology file with [gpu])")
    parser.add_argument("--nodes", type=whole(1, MAX_NODES), default=None, metavar="N",
                        help=f"nodes of the machine written, at most {MAX_NODES} "
                             "(default the log's)")
    parser.add_argument("--algo", type=_setting(NCCL_ALGOS), default=None, metavar="ALGO",
                        help="NCCL_ALGO the runs were given (default: what the log states, "
                             "else NCCL's default)")
    parser.add_argument("--proto", type=_setting(NCCL_PROTOS), default=None, metavar="PROTO",
                        help="NCCL_PROTO the runs were given (default as --algo)")
    parser.add_argument("--env", type=_env, action="append", default=[], metavar="NAME=VALUE",
                        help="an NCCL setting the runs were given (repeat for more; default: "
                             "what the logs state); the model prices "
                             f"{', '.join(SETTINGS)}")
    parser.add_argument("--machine", type=_named, default=None, metavar="FILE",
                        help="with --check: a file fit wrote, or dgx-h100 / dgx-a100")
    parser.add_argument("--check", type=Path, default=None, metavar="LOG",
                        help="score --machine on this log")


def _named(text: str) -> str:
    """A name (an NCCL setting, a machine): an empty one is refused as a bad value."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value is not allowed; give a name")
    return text


def _env(text: str) -> tuple[str, str]:
    """The type of ``--env``: ``NCCL_X=VALUE``."""
    name, sep, value = text.partition("=")
    if not sep or not name.startswith("NCCL_") or not value.strip() \
            or name in ("NCCL_ALGO", "NCCL_PROTO"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; it must be NCCL_NAME=VALUE (NCCL_ALGO and NCCL_PROTO "
            "have --algo and --proto)")
    return name, value.strip()


def _setting(allowed: dict[str, str]) -> Callable[[str], str]:
    """The type of an ``NCCL_ALGO`` / ``NCCL_PROTO`` flag: names (comma-separated) in ``allowed``."""
    def parse(text: str) -> str:
        if not text or not set(text.lower().split(",")) <= set(allowed):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not allowed; it must be one of {', '.join(allowed.values())} "
                "(or several, comma-separated)")
        return text
    return parse


def summary(result: Score) -> str:
    """The last line: ``geomean G% (<1MiB S%, >=64MiB L%)``.

    Parameters
    ----------
    result : simulator.fidelity.Score
        The score.

    Returns
    -------
    str

    Examples
    --------
    >>> from simulator.fidelity import Score
    >>> summary(Score(0.084, 0.12, None, 8, 0.2, 14))
    'geomean 8.4% (<1MiB 12.0%, >=64MiB -)'
    """
    def percent(value: float | None) -> str:
        return "-" if value is None else f"{value:.1%}"
    return (f"geomean {percent(result.geomean)} (<1MiB {percent(result.geomean_small)}, "
            f">=64MiB {percent(result.geomean_large)})")


def _curves(paths: list[Path], args: argparse.Namespace) -> list[Curve]:
    try:
        return [curve_of(read_log(p, args.algo, args.proto, dict(args.env))) for p in paths]
    except LogError as error:
        raise UsageError(str(error)) from None


def _check_arguments(args: argparse.Namespace) -> None:
    if args.check is not None or args.machine is not None:
        if args.check is None or args.machine is None or args.logs or args.output:
            raise UsageError("--machine and --check go together, without LOG or --output: "
                             "collsim fit --machine cluster.toml --check LOG")
        if args.machine not in _PRESETS and not Path(args.machine).is_file():
            raise UsageError(f"--machine {args.machine!r} is neither a file nor one of "
                             f"{', '.join(_PRESETS)}")
        return
    if not args.logs or args.output is None:
        raise UsageError("give LOG [LOG ...] and --output FILE to fit, or --machine FILE "
                         "--check LOG to score")
    check_output("--output", args.output)


def _sizes(curve: Curve, predicted: list[Any], baseline: list[Any] | None = None) -> Table:
    view = Table(title=f"{curve.name}: {curve.ranks} ranks on {curve.nodes} nodes")
    columns = ["size (B)", "measured (us)", *(("preset (us)", "error") if baseline else ()),
               "predicted (us)", "error", "with", "compared"]
    for column in columns:
        view.add_column(column, justify="right")
    for i, (n, t, keep) in enumerate(zip(curve.nbytes, curve.time_s, curve.compared)):
        label, protocol, p = predicted[i]
        before = (f"{baseline[i][2] * 1e6:.1f}", f"{baseline[i][2] / t - 1:+.0%}") \
            if baseline else ()
        view.add_row(str(n), f"{t * 1e6:.1f}", *before, f"{p * 1e6:.1f}", f"{p / t - 1:+.0%}",
                     f"{label} {protocol or ''}", "yes" if keep else "no")
    return view


def _display(name: str, model: topology.GpuModel) -> str:
    """The figure ``name`` of ``model`` in its unit (per hop for latencies)."""
    kind, _, rest = name.partition(" ")
    if kind == "launch":
        return f"{model.launch_s * 1e6:.2f} us"
    if kind == "efficiency":
        return f"{model.figures(rest).efficiency:.3f}"
    if kind == "flow":
        flow = model.figures(rest).flow_Bps
        return "none" if flow is None else f"{flow / 1e9:.1f} GB/s"
    group, protocol = rest.split()
    kinds = ("nvlink",) if group == "nvlink" else ("ib", "pcie")
    return f"{sum(2 * model.figures(k).latency(protocol) for k in kinds) * 1e6:.2f} us/hop"


def _figures(result: Fit) -> Table:
    view = Table(title=f"figures of {', '.join(c.name for c in result.curves)}")
    for column in ("figure", "preset", "fitted", "ratio", "determined by the logs"):
        view.add_column(column, justify="right")
    for figure in FIGURES:
        before, after = (_display(figure.name, m) for m in (result.preset, result.model))
        value = result.values[figure.name]
        ratio = "" if figure.name == "launch" else (
            f"{value / result.preset.figures(figure.name.split()[1]).efficiency:.2f}x"
            if figure.name.startswith("efficiency") else f"{value:.2f}x")
        view.add_row(figure.name, before, after, ratio,
                     f"{result.determined[figure.name]:.0%}")
    return view


def _machine(name: str) -> tuple[str, topology.GpuModel]:
    """The GPU kind and figures ``--machine`` names."""
    if name in _PRESETS:
        return _PRESETS[name], preset_of(_PRESETS[name])
    try:
        loaded = topology.load(name)
    except (topology.TopologyError, OSError) as error:
        raise UsageError(f"--machine {name!r}: {error}") from None
    kind = next((g for g in ("A100", "H100") if g.lower() in loaded.name.lower()), None)
    if loaded.gpu is None or kind is None:
        raise UsageError(f"--machine {name!r} is not a machine collsim fit wrote: it needs a "
                         "[gpu] table and a name with A100 or H100 (dgx_h100(2) ...)")
    return kind, loaded.gpu


def _score(args: argparse.Namespace) -> int:
    kind, model = _machine(args.machine)
    curve = _curves([args.check], args)[0]
    if curve.gpu != kind:
        raise UsageError(f"--check {str(args.check)!r} ran on {curve.gpu}; --machine "
                         f"{args.machine!r} is an {kind} machine")
    predicted, result = check(curve, model)
    out = console()
    out.print(_sizes(curve, predicted))
    if curve.why:
        out.print(f"not compared: {curve.why}", markup=False)
    out.print(summary(result), markup=False)
    return 0


def _write(result: Fit, curves: list[Curve], args: argparse.Namespace) -> str:
    nodes = args.nodes or max(c.nodes for c in curves)
    build = topology.dgx_a100 if curves[0].gpu == "A100" else topology.dgx_h100
    machine = build(nodes, gpu_model=result.model)
    topology.save(machine, args.output, comment=(
        f"{machine.name}, GPU figures fitted by collsim fit to "
        f"{', '.join(str(p) for p in args.logs)}\nnot determined by those logs (the "
        f"preset's, nearly): {', '.join(result.undetermined) or 'none'}"))
    return machine.name


def main(args: argparse.Namespace) -> int:
    """Fit and write the machine, or score one on a log."""
    _check_arguments(args)
    if args.check is not None:
        return _score(args)
    curves = _curves(args.logs, args)
    try:
        result = fit(curves)
    except ValueError as error:
        raise UsageError(str(error)) from None
    out = console()
    out.print(_figures(result))
    for curve, predicted, baseline in zip(curves, result.predicted, result.preset_predicted):
        out.print(_sizes(curve, predicted, baseline))
    out.print("not determined by these logs (left near the preset's): "
              + (", ".join(result.undetermined) or "none"), markup=False)
    name = _write(result, curves, args)
    out.print(f"wrote {args.output} ({name} with the fitted [gpu]); use it as "
              f"collsim select --topology {args.output}", markup=False)
    for curve, (fitted, preset) in zip(curves, result.scores()):
        out.print(f"{curve.name}: preset {summary(preset)}", markup=False)
        out.print(f"{curve.name}: fitted {summary(fitted)}", markup=False)
    return 0
