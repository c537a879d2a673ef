"""The runs feature."""
