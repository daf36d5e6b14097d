"""Verdicts on results for CI and people: thresholds, baselines, groups, GPUs of one host, the doctor."""
