"""Engine: cache, batching, progress."""
