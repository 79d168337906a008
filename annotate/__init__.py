"""annotate package."""
