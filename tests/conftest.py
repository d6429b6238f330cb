"""Shared test configuration: tiers are marked ``mpi`` and ``gpu``."""

from __future__ import annotations

import importlib.util

import pytest


def _gpu_available() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any CUDA failure means "no usable GPU"
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``gpu`` tests cleanly where no GPU and CuPy are present."""
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
