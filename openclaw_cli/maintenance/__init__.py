"""maintenance package."""
