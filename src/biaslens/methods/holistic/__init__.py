"""holistic: see docs/architecture.md."""
