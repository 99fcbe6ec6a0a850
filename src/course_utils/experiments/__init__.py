"""Small, seeded training experiments that the chapters call (each runs in about a minute)."""
