"""Algorithms: one module each, a pure generator of one rank's steps.

Each module defines

* ``PARAMS``: the tuning parameters it takes, with defaults (``None`` means "chosen
  from the rank count and size");
* ``resolve_params(collective, nranks, count, **params) -> dict``: the defaults filled
  in and the values checked (ValueError naming the parameter, the value and what is
  allowed);
* ``rank_steps(collective, rank, nranks, count, blocks, **params) -> sequence of Step``:
  the steps of ``rank``. ``blocks[r]`` is the element range rank ``r`` owns (its
  ReduceScatter output, its AllGather input); an AllReduce may cut the vector as it likes.
"""
