"""Renderers: pure functions from engine values to text lines, JSON objects or rich tables."""
