"""winobias: see docs/architecture.md."""
