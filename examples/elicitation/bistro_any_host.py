"""The bistro of ``bistro.py``, booking for hosts that cannot show forms too.

python examples/elicitation/bistro_any_host.py   # serve over stdio

Many hosts declare no elicitation at all. With ``server.configure_pages(fallback="page")``
the "another evening?" question goes on a page this server serves itself (a loopback port
over stdio, beside ``/mcp`` over HTTP): the call ends with an ordinary result that tells the
model what is needed and gives the link for the person, and once they have answered, the same
call made again (same arguments, same caller) continues with their answer. A host that can
only open URLs gets the form as a link to the page; a host that can show forms still gets the
form, unchanged. Add ``deadline=<seconds>`` to also send the link when a host shows a form but
nobody answers it in time.
"""

from __future__ import annotations

from bistro import server  # type: ignore[import-not-found]  # the same tools; run from this folder

server.configure_pages(fallback="page")

if __name__ == "__main__":
    server.run()
