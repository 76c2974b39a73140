"""The bare baseline: a minimal ASGI app that writes pre-recorded SSE bytes, nothing else.

It answers POST with the exact event frames a real run produced (recorded by bench/run.py into
BENCH_FRAMES_FILE), one frame per write, so comparing it with the real endpoint shows what the
pipeline (auth, lock, database, the advance loop, encoding) costs on top of the server and socket.
"""
import json
import os

with open(os.environ["BENCH_FRAMES_FILE"]) as fh:
    FRAMES = [frame.encode() for frame in json.load(fh)]


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/healthz":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
    for frame in FRAMES:
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
