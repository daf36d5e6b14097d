"""The pure physics: quantities and formulas, the model objects, a workload and its roofline."""
