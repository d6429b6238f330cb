"""SimPy simulator and closed-form alpha-beta-gamma cost model of collective schedules.

Importing this package needs neither MPI, nor a GPU, nor CuPy.
"""

from .cost import cost
from .for_auto import use_for_auto
from .engine import COMPILED_FROM_OPERATIONS, ENGINES, SimulationResult, Transfer, simulate
from .selection import Choice
from .selection import TuningTable
from .selection import select
from .selection import tuning_table

__all__ = ["COMPILED_FROM_OPERATIONS", "ENGINES", "Choice", "SimulationResult", "Transfer",
           "TuningTable", "cost", "select", "simulate", "tuning_table", "use_for_auto"]
