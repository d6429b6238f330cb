"""Algorithms: one module each, a pure generator of one rank's steps.

Each module defines one :class:`collectives.registry.Algorithm` and registers it (see
:mod:`collectives.registry` for what it holds); :data:`MODULES` lists the modules.  A
module whose name starts with ``_`` is a piece of one algorithm split off into a module
of its own (``_tree_cuts``: how the tree's AllGather messages are cut): it registers
nothing and is not in :data:`MODULES`.
"""

__all__ = ["MODULES"]

#: the algorithm modules, in the order selection tries them (ties go to the earlier);
#: a new algorithm is a module here and its name in this list
MODULES: tuple[str, ...] = ("ring", "rhd", "tree", "pipeline", "hier", "bruck", "chain",
                            "binomial", "scatter_allgather", "rabenseifner", "pairwise",
                            "bruck_alltoall", "linear")
