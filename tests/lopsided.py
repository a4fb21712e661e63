"""A correct server (a test double) that is slow for one client host: every
--every-th request from the source address --slow-from is answered after
--delay-ms, every other request at once. Two client hosts sharing a level
then see different tails: the slow host's p99 is the delay, the level's
(every response pooled) is not, when fewer than 1% of all responses waited.
HTTP/1.1 keep-alive, `Connection: close` said back to a request that asks
for it. Listens on BIND:PORT with backlog BACKLOG, as every lab server does."""
import argparse
import asyncio
import os

BODY = b'{"greeting":"Hello World!"}'
args = argparse.ArgumentParser()
args.add_argument("--slow-from", required=True, help="the source address answered slowly")
args.add_argument("--every", type=int, default=70, help="which of its requests wait (N-th)")
args.add_argument("--delay-ms", type=float, default=60.0)
ARGS = args.parse_args()
SEEN = [0]


def answer(close: bool) -> bytes:
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(BODY)).encode() + b"\r\n"
            + (b"Connection: close\r\n" if close else b"") + b"\r\n")
    return head + BODY


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peer = writer.get_extra_info("peername")[0]
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            close = False
            while True:
                header = await reader.readline()
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.partition(b":")
                if name.strip().lower() == b"connection" and b"close" in value.lower():
                    close = True
            if peer == ARGS.slow_from:
                SEEN[0] += 1
                if SEEN[0] % ARGS.every == 0:
                    await asyncio.sleep(ARGS.delay_ms / 1000)
            if line.split()[1:2] == [b"/api"]:
                writer.write(answer(close))
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            if close:
                return
    except (ConnectionError, IndexError):
        return
    finally:
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(serve, os.environ.get("BIND", "127.0.0.1"),
                                        int(os.environ["PORT"]),
                                        backlog=int(os.environ.get("BACKLOG", "512")))
    print(f"lopsided listening, slow for {ARGS.slow_from} every {ARGS.every}", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
