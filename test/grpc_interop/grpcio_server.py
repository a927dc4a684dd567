#!/usr/bin/python3
"""grpcio_server.py [--port P]: grpc.testing.TestService on Debian's python3-grpcio, the second
reference server our gRPC client is tested against (grpcpp_interop_server is the first). Every
unary and streaming method, with the interop behaviours our client's cases use: echo metadata
(x-grpc-test-echo-initial back in the headers, x-grpc-test-echo-trailing-bin in the trailers),
echo status (response_status), response_size and response_parameters (size, interval_us,
compressed), and the two test-only extensions of test/grpc_interop/README.md: x-interop-sleep-ms
(the call sleeps, ending early if the client cancels; such a call is counted) and
x-interop-query: cancelled (EmptyCall answers the count in x-interop-cancelled).

python3-grpcio cannot tell whether a received message came compressed, so expect_compressed is
not checked here (the client_compressed cases run against the other servers).

Messages are encoded and decoded by hand (grpcio_client.py's helpers): Debian ships no generated
Python stubs. Prints "grpcio_server ready on 127.0.0.1:PORT" once serving; SIGTERM or SIGINT
stops it (exit 0).
"""

import argparse
import os
import signal
import sys
import threading
import time
from concurrent import futures

import grpc

sys.dont_write_bytecode = True  # (no __pycache__ left in the checkout by the import below)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grpcio_client import len_field, parse, payload, varint_field  # noqa: E402

SERVICE = "grpc.testing.TestService"
MAX_SLEEP_S = 10.0

_cancelled = 0
_cancelled_lock = threading.Lock()


def metadata(context, key):
    for k, v in context.invocation_metadata() or ():
        if k == key:
            return v
    return None


def echo_metadata(context):
    initial = metadata(context, "x-grpc-test-echo-initial")
    if initial is not None:
        context.send_initial_metadata((("x-grpc-test-echo-initial", initial),))
    trailing = metadata(context, "x-grpc-test-echo-trailing-bin")
    if trailing is not None:
        context.set_trailing_metadata((("x-grpc-test-echo-trailing-bin", trailing),))


def sleep_as_asked(context):
    """x-interop-sleep-ms: sleeps, in steps, while the call lives. False if it was cancelled."""
    asked = metadata(context, "x-interop-sleep-ms")
    if asked is None:
        return True
    end = time.monotonic() + min(int(asked) / 1000.0, MAX_SLEEP_S)
    while time.monotonic() < end:
        if not context.is_active():
            global _cancelled
            with _cancelled_lock:
                _cancelled += 1
            return False
        time.sleep(0.005)
    return True


def status_code(code):
    for c in grpc.StatusCode:
        if c.value[0] == code:
            return c
    return grpc.StatusCode.UNKNOWN


def set_status(context, status_field):
    """response_status (EchoStatus: code = 1, message = 2) as the call's status."""
    st = parse(status_field)
    code = st.get(1, [0])[-1]
    if code == 0:
        return False
    context.set_code(status_code(code))
    context.set_details(st.get(2, [b""])[-1].decode("utf-8"))
    return True


def bool_value(field):
    """A BoolValue (value = 1) field's value."""
    return bool(parse(field).get(1, [0])[-1]) if field is not None else False


def zeros_response(size):
    # SimpleResponse / StreamingOutputCallResponse: payload = 1.
    return len_field(1, payload(bytes(size)))


def empty_call(request, context):
    echo_metadata(context)
    if metadata(context, "x-interop-query") == "cancelled":
        with _cancelled_lock:
            n = _cancelled
        context.set_trailing_metadata((("x-interop-cancelled", str(n)),))
    if not sleep_as_asked(context):
        return b""
    return b""


def unary_call(request, context):
    if not sleep_as_asked(context):
        return b""
    f = parse(request)
    echo_metadata(context)
    if 7 in f and set_status(context, f[7][-1]):
        return b""
    if bool_value(f.get(6, [None])[-1]):
        context.set_compression(grpc.Compression.Gzip)
    return zeros_response(f.get(2, [0])[-1])


def responses_for(request, context):
    """The responses one StreamingOutputCallRequest asks for (response_parameters = 2: size = 1,
    interval_us = 2, compressed = 3), each after its interval; plain unless asked compressed."""
    f = parse(request)
    for params in f.get(2, []):
        p = parse(params)
        interval_us = p.get(2, [0])[-1]
        if interval_us:
            time.sleep(interval_us / 1e6)
        if not bool_value(p.get(3, [None])[-1]):
            context.disable_next_message_compression()
        yield zeros_response(p.get(1, [0])[-1])


def compress_if_asked(request, context):
    for params in parse(request).get(2, []):
        if bool_value(parse(params).get(3, [None])[-1]):
            context.set_compression(grpc.Compression.Gzip)
            return


def streaming_output_call(request, context):
    echo_metadata(context)
    compress_if_asked(request, context)
    yield from responses_for(request, context)
    f = parse(request)
    if 7 in f:
        set_status(context, f[7][-1])


def streaming_input_call(requests, context):
    total = 0
    for request in requests:
        # StreamingInputCallRequest: payload = 1 (body = 2).
        body = parse(parse(request).get(1, [b""])[-1]).get(2, [b""])[-1]
        total += len(body)
    # StreamingInputCallResponse: aggregated_payload_size = 1.
    return varint_field(1, total) if total else b""


def full_duplex_call(requests, context):
    echo_metadata(context)
    compressing = False
    for request in requests:
        f = parse(request)
        if 7 in f and set_status(context, f[7][-1]):
            return
        if not compressing:
            compress_if_asked(request, context)
            compressing = True
        yield from responses_for(request, context)


def half_duplex_call(requests, context):
    echo_metadata(context)
    for request in list(requests):
        yield from responses_for(request, context)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tls_cert", help="serve TLS with this certificate (PEM)")
    ap.add_argument("--tls_key", help="... and its key (PEM)")
    ap.add_argument("--tls_client_ca", help="require client certificates from these CAs (PEM)")
    args = ap.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    handlers = {
        "EmptyCall": grpc.unary_unary_rpc_method_handler(empty_call),
        "UnaryCall": grpc.unary_unary_rpc_method_handler(unary_call),
        "StreamingOutputCall": grpc.unary_stream_rpc_method_handler(streaming_output_call),
        "StreamingInputCall": grpc.stream_unary_rpc_method_handler(streaming_input_call),
        "FullDuplexCall": grpc.stream_stream_rpc_method_handler(full_duplex_call),
        "HalfDuplexCall": grpc.stream_stream_rpc_method_handler(half_duplex_call),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    if args.tls_cert:
        def read(path):
            with open(path, "rb") as f:
                return f.read()
        creds = grpc.ssl_server_credentials(
            [(read(args.tls_key), read(args.tls_cert))],
            root_certificates=read(args.tls_client_ca) if args.tls_client_ca else None,
            require_client_auth=bool(args.tls_client_ca))
        port = server.add_secure_port("127.0.0.1:%d" % args.port, creds)
    else:
        port = server.add_insecure_port("127.0.0.1:%d" % args.port)
    if port == 0:
        print("grpcio_server: cannot listen on 127.0.0.1:%d" % args.port, file=sys.stderr)
        return 1
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    print("grpcio_server ready on 127.0.0.1:%d" % port, flush=True)
    stop.wait()
    server.stop(0).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
