"""sysdiff schemas."""
