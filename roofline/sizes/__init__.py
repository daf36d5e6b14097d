"""Time against size: the fitted and first-principles models and what a sweep is asked."""
