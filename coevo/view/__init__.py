"""`coevo view`: a local web viewer over run folders, and report.html, its static export."""
