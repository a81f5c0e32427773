"""Reports: the run folder and the self-contained HTML pages."""
