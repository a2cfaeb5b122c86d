"""The async layer over the sans-I/O protocol core.

:mod:`.peer` runs one end of a JSON-RPC conversation (both sides share it); :mod:`.contract`
is the typed seam through which transports hand messages to sessions, and sessions ask
transports for stream control. Transports import this package and :mod:`elicitkit.protocol`
only, never :mod:`elicitkit.server` or :mod:`elicitkit.client`.
"""
