"""A web that looks like the web: seeded, on loopback, in a network namespace (issue 29)."""
