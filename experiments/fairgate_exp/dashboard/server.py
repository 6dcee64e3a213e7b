"""The dashboard's ASGI app (Starlette): the page, its static assets, the run's metadata,
an event stream (Server-Sent Events) and, with a simulator run, the step/pace controls.

With a token every request must carry it (``?token=`` or ``Authorization: Bearer``);
requests without it get 403 and nothing else.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from fairgate_exp.dashboard.feed import RunFeed, meta
from fairgate_exp.dashboard.gate import Gate

STATIC = Path(__file__).resolve().parent / "static"
POLL_S = 0.1  # how often the stream looks at the run folder


def new_token() -> str:
    return secrets.token_urlsafe(24)


class TokenGate:
    """ASGI middleware: 403 unless the request carries the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            req = Request(scope)
            given = req.query_params.get("token", "")
            auth = req.headers.get("authorization", "")
            if auth.startswith("Bearer "):
                given = auth.removeprefix("Bearer ")
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                await PlainTextResponse("403: this dashboard needs its access token\n", 403)(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)


@dataclass
class Dashboard:
    feed: RunFeed
    gate: Gate | None = None  # only a live simulator run can be paused and stepped
    live: bool = False

    def state(self) -> dict[str, Any]:
        self.feed.since(len(self.feed.events))  # reads the folder: is summary.json there yet?
        return {
            "live": self.live,
            "steppable": self.gate is not None,
            "done": self.feed.done,
            "gate": self.gate.state() if self.gate is not None else None,
        }


def make_app(dash: Dashboard, token: str | None = None) -> ASGIApp:
    async def index(_req: Request) -> FileResponse:
        return FileResponse(STATIC / "index.html")

    async def meta_route(_req: Request) -> JSONResponse:
        doc = meta(dash.feed.plan, dash.feed.run_dir)
        return JSONResponse({**doc, "state": dash.state()})

    async def state_route(_req: Request) -> JSONResponse:
        return JSONResponse(dash.state())

    async def stream(req: Request) -> StreamingResponse:
        last = req.headers.get("last-event-id") or req.query_params.get("from") or "0"
        start = int(last) if last.isdigit() else 0

        async def events() -> AsyncIterator[str]:
            index = start
            yield "retry: 1000\n\n"
            while True:
                new = await asyncio.to_thread(dash.feed.since, index)
                if new:
                    index += len(new)
                    yield f"id: {index}\ndata: {json.dumps(new)}\n\n"
                state = dash.state()
                yield f"event: state\ndata: {json.dumps(state)}\n\n"
                if state["done"] and not new:
                    return
                if await req.is_disconnected():
                    return
                await asyncio.sleep(POLL_S)

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def control(req: Request) -> JSONResponse:
        if dash.gate is None:
            return JSONResponse({"error": "step and speed work in a live simulator run"}, 409)
        try:
            body = await req.json()
            speed = None if body.get("speed") is None else float(body["speed"])
            state = dash.gate.control(str(body.get("action")), speed)
        except (ValueError, TypeError, AttributeError) as exc:
            return JSONResponse({"error": str(exc)}, 400)
        if body.get("action") == "step":
            await asyncio.to_thread(dash.gate.wait_steps_done, 30.0)
            state = dash.gate.state()
        return JSONResponse(state)

    app: ASGIApp = Starlette(
        routes=[
            Route("/", index),
            Route("/api/meta", meta_route),
            Route("/api/state", state_route),
            Route("/api/stream", stream),
            Route("/api/control", control, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
    )
    if token is not None:
        app = TokenGate(app, token)
    return app
