"""Config files and their shared blocks, role specs, size limits and departures."""
