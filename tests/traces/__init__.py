"""Tests of traces."""
