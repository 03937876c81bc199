"""migration package."""
