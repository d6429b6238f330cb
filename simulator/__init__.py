"""SimPy simulator and closed-form alpha-beta-gamma cost model of collective schedules.

Importing this package needs neither MPI, nor a GPU, nor CuPy.
"""

from .cost import cost
from .engine import SimulationResult, Transfer, simulate
from .select import Choice
from .select import TuningTable
from .select import select
from .select import tuning_table

__all__ = ["Choice", "SimulationResult", "Transfer", "TuningTable", "cost", "select",
           "simulate", "tuning_table"]
