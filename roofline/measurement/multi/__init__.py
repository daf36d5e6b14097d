"""Every GPU of a host at once: a worker process per device, and measure, sweep and calibrate over them."""
