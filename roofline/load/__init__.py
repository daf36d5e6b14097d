"""Files in and out at the edges: YAML specs and descriptors to model objects, JSON written atomically."""
