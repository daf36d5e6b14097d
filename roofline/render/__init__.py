"""Renderers: pure functions from analysis or results documents to text. No physics here."""
