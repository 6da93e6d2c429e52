"""noisygd: differentially private ERM by noisy gradient methods, with exact accounting."""

__version__ = "0.1.0"
