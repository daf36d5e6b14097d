"""Measurement: run a kernel's implementation, verify it against its NumPy reference, time it honestly.

Only backend_cupy imports cupy; everything else runs on any machine.
"""
