"""mkdocs hook (mkdocs.yml `hooks:`): the Python API page renders bench.api's reStructuredText roles as code.

The docstrings cross-reference with Sphinx roles (:func:`run`, :class:`~bench.run.RunResult`), which mkdocstrings
shows literally; this turns ``:role:<code>x</code>`` into ``<code>x</code>`` (``~a.b.C``: just ``C``), and links
the functions of ``bench.api`` to their entries on the page.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):<code>(~?)([\w.]+)</code>")


def on_page_content(html, page, config, files):
    if ":<code>" not in html:
        return html

    def code(m: re.Match) -> str:
        short, name = m.group(1), m.group(2)
        shown = name.rsplit(".", 1)[-1] if short else name
        if "." not in name and f'id="bench.api.{name}"' in html:
            return f'<a href="#bench.api.{name}"><code>{shown}</code></a>'
        return f"<code>{shown}</code>"

    return ROLE.sub(code, html)
