"""sysdiff flows."""
