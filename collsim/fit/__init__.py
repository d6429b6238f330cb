"""``collsim fit``: the GPU model fitted to a cluster's own nccl-tests output.

:mod:`.logs` reads nccl-tests output, :mod:`.figures` fits and checks the figures,
:mod:`.cli` is the command.
"""
