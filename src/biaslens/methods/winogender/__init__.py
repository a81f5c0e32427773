"""winogender: see docs/architecture.md."""
