"""Machines as data: devices, switches, NICs and links; routes, presets, files, calibration."""
