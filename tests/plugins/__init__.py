"""Tests of the built-in plugins (judges, aggregators) and the plugin contracts."""
