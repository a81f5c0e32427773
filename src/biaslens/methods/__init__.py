"""Bias methods, one folder each: a method's declaration, options, dataset reader and shipped data,
metric (pure functions) and report section together, on the shared platform (engine, models,
scorers, report and comparison frameworks, general statistics)."""
