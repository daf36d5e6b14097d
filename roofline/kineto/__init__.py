"""PyTorch profiler (Kineto) traces on the roofline: FLOPs and bytes from the ATen ops' recorded shapes."""
