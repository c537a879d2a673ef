"""The API docs, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), which work with no network.

FastAPI's recipe for self-hosted docs assets, with the Swagger UI and ReDoc files of the
``fastapi-offline`` package (a maintained PyPI distribution of them, licences included) served
by this app. A Content-Security-Policy keeps both pages on this service alone: ReDoc's bundle
still asks its vendor's CDN for a logo, which the browser then never requests, and Swagger's
online validator badge is switched off.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse

#: Where the pages' scripts, styles and icon are served from (open, like the pages).
ASSETS = "/docs-assets"

#: Everything from this service; inline scripts and styles (Swagger's start-up script,
#: the styles both UIs inject), images as data URLs, ReDoc's search worker from a blob.
POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "worker-src 'self' blob:",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ]
)


def _local(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = POLICY
    return page


def add_docs(app: FastAPI) -> None:
    """Serve the docs pages and their assets on ``app`` (built with docs_url=None and
    redoc_url=None, so that FastAPI's own CDN-backed pages are off)."""
    assets = files("fastapi_offline") / "static"
    app.mount(ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local(
            get_swagger_ui_html(
                openapi_url=f"{root}{openapi_url}",
                title=f"{app.title} - Swagger UI",
                swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
                swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
                swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
                swagger_ui_parameters={"validatorUrl": None},
            )
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return _local(
            get_redoc_html(
                openapi_url=f"{root}{openapi_url}",
                title=f"{app.title} - ReDoc",
                redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
                redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
                with_google_fonts=False,
            )
        )
