"""The scoring feature."""
