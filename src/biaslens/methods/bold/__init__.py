"""bold: see docs/architecture.md."""
