"""A gRPC client that stops reading, by hand on a raw socket (no gRPC library: grpcio would read
and buffer on its own). It asks StreamingOutputCall for COUNT responses of SIZE bytes with the
default HTTP/2 windows (65535), reads nothing for --stall-ms, prints "stalled", then reads it all
(returning each DATA frame's bytes to the windows) and prints
"received MESSAGES messages BYTES bytes end E" (E 0: trailers after the messages, -1:
Trailers-Only, -2: a reset or GOAWAY). Exit 0 when it got the trailers, 1 if not (the server
closed, or --timeout-ms passed).

usage: stalled_reader.py --server HOST:PORT [--count 1024] [--size 65536] [--stall-ms 1500]
"""
import argparse
import socket
import struct
import sys
import time

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS, ACK = 1, 4, 1


def frame(ftype, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(
        ">I", stream) + payload


def hpack_string(s):
    b = s.encode()
    assert len(b) < 127
    return bytes([len(b)]) + b


def literal(name, value):  # literal without indexing, new name
    return b"\x00" + hpack_string(name) + hpack_string(value)


def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def request(count, size):
    param = b"\x08" + varint(size)  # ResponseParameters.size
    one = b"\x12" + varint(len(param)) + param  # StreamingOutputCallRequest.response_parameters
    body = one * count
    return b"\x00" + struct.pack(">I", len(body)) + body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--count", type=int, default=1024)
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--stall-ms", type=int, default=1500)
    ap.add_argument("--timeout-ms", type=int, default=20000)
    a = ap.parse_args()
    host, port = a.server.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=a.timeout_ms / 1000)
    headers = (b"\x83\x86\x04" + hpack_string("/grpc.testing.TestService/StreamingOutputCall") +
               b"\x01" + hpack_string(a.server) + literal("content-type", "application/grpc") +
               literal("te", "trailers"))
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(SETTINGS, 0, 0, b"") +
                 frame(HEADERS, END_HEADERS, 1, headers) +
                 frame(DATA, END_STREAM, 1, request(a.count, a.size)))
    time.sleep(a.stall_ms / 1000)
    print("stalled", flush=True)
    buf = b""
    messages_bytes = 0
    status = None
    deadline = time.monotonic() + a.timeout_ms / 1000
    header_blocks = 0
    while status is None and time.monotonic() < deadline:
        try:
            chunk = sock.recv(1 << 20)
        except socket.timeout:
            break
        if not chunk:
            break
        buf += chunk
        out = b""
        while len(buf) >= 9:
            length = int.from_bytes(buf[0:3], "big")
            if len(buf) < 9 + length:
                break
            ftype, flags = buf[3], buf[4]
            stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            payload = buf[9:9 + length]
            buf = buf[9 + length:]
            if ftype == SETTINGS and not flags & ACK:
                out += frame(SETTINGS, ACK, 0, b"")
            elif ftype == PING and not flags & ACK:
                out += frame(PING, ACK, 0, payload)
            elif ftype == DATA and stream == 1:
                messages_bytes += length
                if length:
                    inc = struct.pack(">I", length)
                    out += frame(WINDOW_UPDATE, 0, 0, inc) + frame(WINDOW_UPDATE, 0, 1, inc)
            elif ftype == HEADERS and stream == 1:
                header_blocks += 1
                if flags & END_STREAM:
                    # Trailers after the headers (HPACK may have Huffman-coded the status, so
                    # only their order is checked): the stream ended cleanly, not Trailers-Only.
                    status = 0 if header_blocks > 1 else -1
            elif ftype in (RST_STREAM, GOAWAY):
                status = -2
        if out:
            sock.sendall(out)
    # Each message: a 5-byte prefix and the response (SIZE bytes of payload and 8 of protobuf
    # framing for the sizes used here).
    messages = messages_bytes // (a.size + 8 + 5)
    print("received %d messages %d bytes end %s" % (messages, messages_bytes, status),
          flush=True)
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
