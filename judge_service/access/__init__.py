"""The access feature."""
