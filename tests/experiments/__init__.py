"""Tests of workbench (a package: test file names such as test_experiments.py repeat across folders)."""
