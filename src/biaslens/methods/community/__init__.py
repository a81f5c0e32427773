"""community: see docs/architecture.md."""
