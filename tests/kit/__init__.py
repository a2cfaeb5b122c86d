"""The test kit: one raw JSON-RPC peer (:mod:`kit.raw`) and one process helper (:mod:`kit.processes`).

Every test that spawns a server or speaks raw protocol goes through here, so there is one way
to start, reach and stop a child and one way to put bytes on the wire.
"""
