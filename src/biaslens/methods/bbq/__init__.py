"""bbq: see docs/architecture.md."""
