"""The tool's version, on the ground floor: every stage stamps it into the files it writes, and importing it from the
package (`from roofline import __version__`) would run `roofline/__init__`, the public face above every stage."""

__version__ = "0.1.0"
