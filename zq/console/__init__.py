"""The operator console's static files (``/console``, served by zq.api.console).

The page is plain HTML, CSS and JavaScript modules under ``static/``: no
build step, nothing vendored. It calls zq's public REST API and nothing
else (docs/console.md).
"""
