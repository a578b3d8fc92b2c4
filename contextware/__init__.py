"""Contextware: persistent, searchable local memory for coding agents."""
__version__ = "0.1.0"
