"""Thin CLI command modules; each exposes `register(app)` which adds its commands to a typer app."""
