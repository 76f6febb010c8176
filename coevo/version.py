"""coevo's version, a leaf module: what records and pages cite it from import this, not the
package root (whose public names resolve lazily to modules above them)."""

__version__ = "0.1.0"
