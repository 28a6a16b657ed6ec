"""sysdiff transforms."""
