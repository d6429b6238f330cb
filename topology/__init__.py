"""Machines as data: devices, switches, NICs and links; routes, presets, files, calibration.

Importing this package needs neither MPI, nor SimPy, nor a GPU.
"""

from .errors import TopologyError
from .files import dumps, load, loads, save
from .gpu import GpuModel, LinkFigures, Protocol
from .gpu_presets import DGX_A100_GPU, DGX_H100_GPU
from .model import Device, Link, Topology
from .order import ring_order
from .presets import (FLAT_ALPHA_S, FLAT_BETA_S_PER_BYTE, PRESET_NAMES, dgx_a100, dgx_h100, flat,
                      pcie_node, preset, rail_fat_tree)

__all__ = [
    "DGX_A100_GPU", "DGX_H100_GPU", "Device", "FLAT_ALPHA_S", "GpuModel", "LinkFigures",
    "Protocol", "FLAT_BETA_S_PER_BYTE", "Link", "PRESET_NAMES", "Topology",
    "TopologyError", "dgx_a100", "dgx_h100", "dumps", "flat", "load", "loads", "pcie_node",
    "preset", "rail_fat_tree", "ring_order", "save",
]
