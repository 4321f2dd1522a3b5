"""transportlab: a laboratory for transport protocols and congestion control."""

__version__ = "0.1.0"
