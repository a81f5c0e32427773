"""crows_pairs: see docs/architecture.md."""
