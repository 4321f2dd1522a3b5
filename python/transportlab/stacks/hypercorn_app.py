"""The ASGI application Hypercorn serves for the lab (docs/stacks.md): GET /N answers N
zero bytes, streamed in 64 KiB chunks (Hypercorn waits for the socket to drain between
them, so a bulk download does not fill memory)."""

from __future__ import annotations

CHUNK = bytes(64 * 1024)


async def app(scope, receive, send) -> None:
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
    try:
        n = int(scope["path"].strip("/"))
    except ValueError:
        n = -1
    if scope["method"] != "GET" or n < 0:
        await send({"type": "http.response.start", "status": 400, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(n).encode())]})
    left = n
    while left > 0:
        k = min(len(CHUNK), left)
        left -= k
        await send({"type": "http.response.body", "body": CHUNK[:k], "more_body": left > 0})
    if n == 0:
        await send({"type": "http.response.body", "body": b""})
