"""Input formats: one reader module per format family, each validating what it reads."""
