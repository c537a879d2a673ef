"""Tests of world."""
