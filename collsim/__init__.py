"""The tools on top of the three layers: the ``collsim`` command and what it runs.

Benchmarks (``bench``), the host-model predictor (``predict``), calibration
(``calibrate``), simulation and selection front ends (``simulate``, ``select``), schedule
printing (``schedule``), and launching Python under the pip-installed ``mpirun``
(:mod:`collsim.launch`).  This package may import :mod:`topology`, :mod:`collectives` and
:mod:`simulator`; none of them imports it.
"""
