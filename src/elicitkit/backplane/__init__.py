"""Sharing one server's state across a fleet of instances (sessions, tasks, spent rounds)."""
