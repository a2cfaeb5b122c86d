"""The demo behind the README's first command (``elicitkit demo``): see :mod:`elicitkit.demo.walkthrough`."""
