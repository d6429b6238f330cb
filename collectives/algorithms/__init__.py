"""Algorithms: one module each, a pure generator of one rank's steps.

Each module defines one :class:`collectives.registry.Algorithm` and registers it (see
:mod:`collectives.registry` for what it holds); :data:`MODULES` lists the modules.
"""

__all__ = ["MODULES"]

#: the algorithm modules, in the order selection tries them (ties go to the earlier);
#: a new algorithm is a module here and its name in this list
MODULES: tuple[str, ...] = ("ring", "rhd", "tree", "pipeline", "hier", "bruck", "chain",
                            "binomial", "scatter_allgather", "rabenseifner", "pairwise",
                            "bruck_alltoall", "linear")
