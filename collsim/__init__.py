"""The tools on top of the three layers: the ``collsim`` command and what it runs.

Benchmarks (``bench``), the host-model predictor (``predict``), calibration
(``calibrate``), simulation and selection front ends (``simulate``, ``select``), schedule
printing (``schedule``), and launching Python under the pip-installed ``mpirun``
(:mod:`collsim.launch`).  The arguments every command shares (size sweeps, datatypes,
machines, output files) and their checks are in :mod:`collsim.args`; where output goes
(plain when piped, progress on a terminal) in :mod:`collsim.terminal`.  This package may import :mod:`topology`, :mod:`collectives` and
:mod:`simulator`; none of them imports it.
"""
