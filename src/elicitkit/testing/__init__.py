"""Programs that exist to be driven by test harnesses: the conformance client (and server)."""
