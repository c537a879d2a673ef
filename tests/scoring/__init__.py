"""Tests of scoring."""
