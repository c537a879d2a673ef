"""Tests of the project as a whole: its rules, packaging and README."""
