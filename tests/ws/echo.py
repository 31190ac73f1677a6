"""A real WebSocket server (Python websockets, Debian's python3-websockets)
for tests/http2_tunnels.rs: serves on IP:<free port>, prints the port, and
echoes each message prefixed with "echo:" and the request path, until its
stdin closes."""
import asyncio
import logging
import sys

import websockets


async def echo(ws, path=None):
    path = path if path is not None else ws.path
    async for msg in ws:
        await ws.send(f"echo:{path}:{msg}")


async def main(ip):
    # A client cut at the end of a test is not worth a traceback.
    logging.getLogger("websockets").setLevel(logging.CRITICAL)
    async with websockets.serve(echo, ip, 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(port, flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
