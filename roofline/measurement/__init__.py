"""Measurement: run a kernel's implementation, verify it against its NumPy reference, time it honestly.

Only backend_cupy (and the modules it owns) imports cupy; everything else runs on any machine. The package was
called `roofline.measure` until the public function of that name (roofline.api.measure) needed the name back.
"""
