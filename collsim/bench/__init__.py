"""Benchmarks of the collectives under ``mpirun``, in the layout of nccl-tests.

* :mod:`.options`: the command line (nccl-tests' ``-b -e -f -n -w -c -d -o`` and more);
* :mod:`.check`: inputs whose reduction is known exactly, and the #wrong count;
* :mod:`.runner`: the timing loop on every rank;
* :mod:`.predict`: the model's time per algorithm and its choice;
* :mod:`.report`: the results document, nccl-tests tables, JSON and CSV;
* :mod:`.plot`: busbw against size, measured and predicted, crossovers marked;
* :mod:`.cli`: ``collsim bench`` / ``python -m collsim bench``.

Importing this package imports neither mpi4py nor CuPy.
"""

from .check import count_wrong, expected, rank_input
from .plot import crossovers, plot_busbw
from .report import best_table, document, load_json, measured_best, table

__all__ = ["best_table", "count_wrong", "crossovers", "document", "expected", "load_json",
           "measured_best", "plot_busbw", "rank_input", "table"]
