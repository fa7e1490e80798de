"""Thin click commands: parse options, one engine call, one renderer, return a Status."""
