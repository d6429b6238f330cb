"""Machines as data: devices, switches, NICs and links; routes, presets, files, calibration.

Importing this package needs neither MPI, nor SimPy, nor a GPU.
"""

from .channels import ranks_per_node
from .errors import TopologyError
from .files import dumps, load, loads, save
from .gpu import AlgorithmFigures, GpuModel, LinkFigures, Protocol
from .gpu_presets import DGX_A100_GPU, DGX_H100_GPU
from .model import Device, FullMesh, Link, Topology
from .order import ring_order
from .presets import (DEFAULT_ALPHA_S, DEFAULT_BETA_S_PER_BYTE, DEFAULT_GAMMA_S_PER_BYTE,
                      FLAT_ALPHA_S, FLAT_BETA_S_PER_BYTE, PRESET_NAMES, default_flat, dgx_a100,
                      dgx_h100, flat, mesh, pcie_node, preset, rail_fat_tree)

__all__ = [
    "AlgorithmFigures", "DEFAULT_ALPHA_S", "DEFAULT_BETA_S_PER_BYTE",
    "DEFAULT_GAMMA_S_PER_BYTE", "DGX_A100_GPU", "DGX_H100_GPU", "Device", "FLAT_ALPHA_S",
    "FLAT_BETA_S_PER_BYTE", "FullMesh", "GpuModel", "Link", "LinkFigures", "PRESET_NAMES",
    "Protocol", "Topology",
    "TopologyError", "dgx_a100", "dgx_h100", "default_flat", "dumps", "flat",
    "load", "loads", "mesh", "pcie_node", "preset", "rail_fat_tree", "ranks_per_node", "ring_order",
    "save",
]
