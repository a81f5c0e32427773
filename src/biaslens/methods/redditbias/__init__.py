"""redditbias: see docs/architecture.md."""
