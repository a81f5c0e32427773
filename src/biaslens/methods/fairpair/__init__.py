"""fairpair: see docs/architecture.md."""
