"""Tests of the server-side Tasks engine and its stores."""
