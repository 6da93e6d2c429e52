"""Reproductions of the source documents' tables and figures (``noisygd reproduce NAME``)."""
