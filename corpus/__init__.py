"""corpus package."""
