"""roofline: GPU roofline analysis from YAML machine specs and kernel descriptors."""

__version__ = "0.1.0"
