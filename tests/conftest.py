"""Shared pytest configuration; importing this makes `tests.builders` importable from every test."""
