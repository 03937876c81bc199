"""Typer apps only: parse options, call the library, render."""
