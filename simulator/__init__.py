"""SimPy simulator and closed-form alpha-beta-gamma cost model of collective schedules.

Importing this package needs neither MPI, nor a GPU, nor CuPy.
"""

from .cost import cost
from .engine import SimulationResult, Transfer, simulate

__all__ = ["SimulationResult", "Transfer", "cost", "simulate"]
