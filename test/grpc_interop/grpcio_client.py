#!/usr/bin/python3
"""grpcio_client.py --server HOST:PORT --test_case all|NAME: a second reference client for our
gRPC server, on Debian's python3-grpcio (a C-core client, but not grpc++). It runs these interop
cases of gRPC's interop-test-descriptions.md against grpc.testing.TestService: the unary
empty_unary, large_unary, custom_metadata, status_code_and_message (unary and full duplex) and
unimplemented_method, then the streaming client_streaming, server_streaming, ping_pong,
empty_stream, cancel_after_begin, cancel_after_first_response and
timeout_on_sleeping_server_streaming.

Debian ships no generated Python stubs (and grpcio-tools is not needed): the few messages are
encoded and decoded by hand below, and the calls go through channel.unary_unary(),
unary_stream(), stream_unary() and stream_stream() with bytes in and out. Field numbers are those
of grpc-proto's grpc/testing/messages.proto.

Prints "PASS <case>" or "FAIL <case>: <why>" per case; exits 0 only if every case passed (1
otherwise, 2 on bad usage). Every call has a 10 s deadline (timeout_on_sleeping_server_streaming:
1 ms), and every request iterator that waits gives up after 10 s, so a run cannot hang.
"""

import argparse
import queue
import sys
import threading

import grpc

DEADLINE_S = 10.0
REQUEST_SIZE = 271828
RESPONSE_SIZE = 314159
# The streaming cases' sizes, from interop-test-descriptions.md.
STREAM_REQUEST_SIZES = [27182, 8, 1828, 45904]
STREAM_RESPONSE_SIZES = [31415, 9, 2653, 58979]
SERVICE = "/grpc.testing.TestService/"

# Wire types.
VARINT = 0
I64 = 1
LEN = 2
I32 = 5


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(field, wire_type):
    return varint(field << 3 | wire_type)


def len_field(field, data):
    return tag(field, LEN) + varint(len(data)) + data


def varint_field(field, n):
    return tag(field, VARINT) + varint(n)


def payload(body):
    # Payload: type = 1 (PayloadType, COMPRESSABLE = 0 is the default and not sent), body = 2.
    return len_field(2, body)


def simple_request(response_size=0, body=None, status=None):
    # SimpleRequest: response_type = 1 (COMPRESSABLE, the default), response_size = 2,
    # payload = 3, response_status = 7 (EchoStatus: code = 1, message = 2).
    out = b""
    if response_size:
        out += varint_field(2, response_size)
    if body is not None:
        out += len_field(3, payload(body))
    if status is not None:
        code, message = status
        out += len_field(7, varint_field(1, code) + len_field(2, message.encode("utf-8")))
    return out


def streaming_output_request(response_sizes=(), body=None, status=None):
    # StreamingOutputCallRequest: response_type = 1 (COMPRESSABLE, the default),
    # response_parameters = 2 (repeated ResponseParameters: size = 1, interval_us = 2),
    # payload = 3, response_status = 7 (EchoStatus: code = 1, message = 2).
    out = b""
    for size in response_sizes:
        out += len_field(2, varint_field(1, size) if size else b"")
    if body is not None:
        out += len_field(3, payload(body))
    if status is not None:
        code, message = status
        out += len_field(7, varint_field(1, code) + len_field(2, message.encode("utf-8")))
    return out


def streaming_input_request(body):
    # StreamingInputCallRequest: payload = 1.
    return len_field(1, payload(body))


class Requests:
    """A request iterator fed from another thread: put() a request, close() to half-close.

    Waits at most DEADLINE_S for each next request, then ends (half-closes) by itself."""

    def __init__(self):
        self._queue = queue.Queue()

    def put(self, request):
        self._queue.put(request)

    def close(self):
        self._queue.put(None)

    def __iter__(self):
        while True:
            try:
                request = self._queue.get(timeout=DEADLINE_S)
            except queue.Empty:
                return
            if request is None:
                return
            yield request


def then_block(requests, release):
    """Yields `requests`, then blocks until `release` (a threading.Event) is set or DEADLINE_S
    has passed, and only then half-closes."""
    yield from requests
    release.wait(DEADLINE_S)


def parse(data):
    """The fields of one protobuf message: {field number: [values]} (ints or bytes)."""
    fields = {}
    at = 0

    def read_varint():
        nonlocal at
        n = 0
        shift = 0
        while True:
            if at >= len(data):
                raise ValueError("truncated varint")
            byte = data[at]
            at += 1
            n |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return n

    while at < len(data):
        key = read_varint()
        field, wire_type = key >> 3, key & 7
        if wire_type == VARINT:
            value = read_varint()
        elif wire_type == LEN:
            size = read_varint()
            if at + size > len(data):
                raise ValueError("truncated field %d" % field)
            value = data[at:at + size]
            at += size
        elif wire_type in (I64, I32):
            size = 8 if wire_type == I64 else 4
            value = data[at:at + size]
            at += size
        else:
            raise ValueError("wire type %d of field %d" % (wire_type, field))
        fields.setdefault(field, []).append(value)
    return fields


def check_payload(response, size):
    """'' if a SimpleResponse's or StreamingOutputCallResponse's payload (field 1) is `size` zero
    bytes, else what is wrong."""
    fields = parse(response)
    payload_fields = parse(fields[1][-1]) if 1 in fields else {}
    if payload_fields.get(1, [0])[-1] != 0:
        return "response payload type is %d" % payload_fields[1][-1]
    body = payload_fields.get(2, [b""])[-1]
    if len(body) != size:
        return "response payload is %d bytes, expected %d" % (len(body), size)
    if body.count(0) != size:
        return "response payload is not all zeros"
    return ""


def describe(err):
    return "status %d (%s) %r" % (err.code().value[0], err.code().name, err.details())


def metadata_value(metadata, key):
    for k, v in metadata or ():
        if k == key:
            return v
    return None


class Interop:
    def __init__(self, channel):
        self.channel = channel

    def call(self, method, request, metadata=None):
        """(response bytes, call) of a unary call; raises grpc.RpcError if it fails."""
        stub = self.channel.unary_unary(SERVICE + method)
        return stub.with_call(request, timeout=DEADLINE_S, metadata=metadata)

    def client_stream(self, method):
        return self.channel.stream_unary(SERVICE + method)

    def server_stream(self, method):
        return self.channel.unary_stream(SERVICE + method)

    def bidi_stream(self, method):
        return self.channel.stream_stream(SERVICE + method)

    def empty_unary(self):
        try:
            response, _ = self.call("EmptyCall", b"")
        except grpc.RpcError as err:
            return "EmptyCall: " + describe(err)
        return "" if response == b"" else "EmptyCall's reply is not empty: %r" % response

    def large_unary(self):
        try:
            response, _ = self.call(
                "UnaryCall", simple_request(RESPONSE_SIZE, bytes(REQUEST_SIZE)))
        except grpc.RpcError as err:
            return "UnaryCall: " + describe(err)
        return check_payload(response, RESPONSE_SIZE)

    def custom_metadata(self):
        initial = ("x-grpc-test-echo-initial", "test_initial_metadata_value")
        trailing = ("x-grpc-test-echo-trailing-bin", b"\xab\xab\xab")
        try:
            response, call = self.call(
                "UnaryCall", simple_request(RESPONSE_SIZE, bytes(REQUEST_SIZE)),
                metadata=[initial, trailing])
        except grpc.RpcError as err:
            return "UnaryCall: " + describe(err)
        bad = check_payload(response, RESPONSE_SIZE)
        if bad:
            return bad
        got = metadata_value(call.initial_metadata(), initial[0])
        if got != initial[1]:
            return "%s in the initial metadata is %r, expected %r" % (initial[0], got, initial[1])
        got = metadata_value(call.trailing_metadata(), trailing[0])
        if got != trailing[1]:
            return "%s in the trailing metadata is %r, expected %r" % (
                trailing[0], got, trailing[1])
        return ""

    def status_code_and_message(self):
        code, message = 2, "test status message"
        try:
            self.call("UnaryCall", simple_request(status=(code, message)))
        except grpc.RpcError as err:
            if err.code().value[0] != code or err.details() != message:
                return "UnaryCall: %s, expected status %d %r" % (describe(err), code, message)
        else:
            return "UnaryCall succeeded, expected status %d %r" % (code, message)
        # The streaming half: one request asking for the status, then half-close.
        call = self.bidi_stream("FullDuplexCall")(
            iter([streaming_output_request(status=(code, message))]), timeout=DEADLINE_S)
        try:
            responses = list(call)
        except grpc.RpcError as err:
            if err.code().value[0] == code and err.details() == message:
                return ""
            return "FullDuplexCall: %s, expected status %d %r" % (describe(err), code, message)
        return "FullDuplexCall succeeded with %d responses, expected status %d %r" % (
            len(responses), code, message)

    def unimplemented_method(self):
        try:
            self.call("UnimplementedCall", b"")
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                return ""
            return ("grpc.testing.TestService/UnimplementedCall: %s, expected UNIMPLEMENTED (12)"
                    % describe(err))
        return "grpc.testing.TestService/UnimplementedCall succeeded, expected UNIMPLEMENTED"

    def client_streaming(self):
        requests = [streaming_input_request(bytes(n)) for n in STREAM_REQUEST_SIZES]
        try:
            response, _ = self.client_stream("StreamingInputCall").with_call(
                iter(requests), timeout=DEADLINE_S)
        except grpc.RpcError as err:
            return "StreamingInputCall: " + describe(err)
        got = parse(response).get(1, [0])[-1]
        want = sum(STREAM_REQUEST_SIZES)
        if got != want:
            return "aggregated_payload_size is %d, expected %d" % (got, want)
        return ""

    def server_streaming(self):
        call = self.server_stream("StreamingOutputCall")(
            streaming_output_request(STREAM_RESPONSE_SIZES), timeout=DEADLINE_S)
        try:
            responses = list(call)
        except grpc.RpcError as err:
            return "StreamingOutputCall: " + describe(err)
        if call.code() != grpc.StatusCode.OK:
            return "StreamingOutputCall: status %s %r, expected OK" % (
                call.code().name, call.details())
        if len(responses) != len(STREAM_RESPONSE_SIZES):
            return "%d responses, expected %d" % (len(responses), len(STREAM_RESPONSE_SIZES))
        for i, (response, size) in enumerate(zip(responses, STREAM_RESPONSE_SIZES)):
            bad = check_payload(response, size)
            if bad:
                return "response %d: %s" % (i, bad)
        return ""

    def ping_pong(self):
        requests = Requests()
        call = self.bidi_stream("FullDuplexCall")(iter(requests), timeout=DEADLINE_S)
        try:
            for i, (out, back) in enumerate(zip(STREAM_REQUEST_SIZES, STREAM_RESPONSE_SIZES)):
                requests.put(streaming_output_request([back], bytes(out)))
                try:
                    response = next(call)
                except StopIteration:
                    return "the stream ended after %d responses, expected %d" % (
                        i, len(STREAM_RESPONSE_SIZES))
                bad = check_payload(response, back)
                if bad:
                    return "response %d: %s" % (i, bad)
            requests.close()
            extra = list(call)
            if extra:
                return "%d more responses after the half-close, expected none" % len(extra)
        except grpc.RpcError as err:
            return "FullDuplexCall: " + describe(err)
        finally:
            requests.close()
        if call.code() != grpc.StatusCode.OK:
            return "FullDuplexCall: status %s %r, expected OK" % (call.code().name, call.details())
        return ""

    def empty_stream(self):
        call = self.bidi_stream("FullDuplexCall")(iter([]), timeout=DEADLINE_S)
        try:
            responses = list(call)
        except grpc.RpcError as err:
            return "FullDuplexCall: " + describe(err)
        if responses:
            return "%d responses, expected none" % len(responses)
        if call.code() != grpc.StatusCode.OK:
            return "FullDuplexCall: status %s %r, expected OK" % (call.code().name, call.details())
        return ""

    def cancel_after_begin(self):
        release = threading.Event()
        try:
            future = self.client_stream("StreamingInputCall").future(
                then_block([], release), timeout=DEADLINE_S)
            future.cancel()
            code = future.code()
        finally:
            release.set()
        if code != grpc.StatusCode.CANCELLED:
            return "StreamingInputCall: status %s %r, expected CANCELLED" % (
                code.name, future.details())
        return ""

    def cancel_after_first_response(self):
        requests = Requests()
        call = self.bidi_stream("FullDuplexCall")(iter(requests), timeout=DEADLINE_S)
        try:
            requests.put(streaming_output_request(
                [STREAM_RESPONSE_SIZES[0]], bytes(STREAM_REQUEST_SIZES[0])))
            try:
                response = next(call)
            except StopIteration:
                return "the stream ended without a response"
            except grpc.RpcError as err:
                return "FullDuplexCall: " + describe(err)
            bad = check_payload(response, STREAM_RESPONSE_SIZES[0])
            if bad:
                return bad
            call.cancel()
        finally:
            requests.close()
        if call.code() != grpc.StatusCode.CANCELLED:
            return "FullDuplexCall: status %s %r, expected CANCELLED" % (
                call.code().name, call.details())
        return ""

    def timeout_on_sleeping_server_streaming(self):
        release = threading.Event()
        try:
            call = self.bidi_stream("FullDuplexCall")(
                then_block([streaming_output_request(body=bytes(STREAM_REQUEST_SIZES[0]))],
                           release),
                timeout=0.001)
            try:
                responses = list(call)
            except grpc.RpcError as err:
                if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    return ""
                return "FullDuplexCall: %s, expected DEADLINE_EXCEEDED (4)" % describe(err)
        finally:
            release.set()
        return "FullDuplexCall succeeded with %d responses, expected DEADLINE_EXCEEDED" % len(
            responses)


# In the order `all` runs them.
CASES = ["empty_unary", "large_unary", "custom_metadata", "status_code_and_message",
         "unimplemented_method", "client_streaming", "server_streaming", "ping_pong",
         "empty_stream", "cancel_after_begin", "cancel_after_first_response",
         "timeout_on_sleeping_server_streaming"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="HOST:PORT")
    parser.add_argument("--test_case", required=True, choices=["all"] + CASES)
    parser.add_argument("--ca", help="TLS: the CAs (PEM) the server's certificate chains to")
    parser.add_argument("--cert", help="TLS: our certificate (PEM), for mutual TLS")
    parser.add_argument("--key", help="TLS: its private key (PEM)")
    args = parser.parse_args()

    cases = CASES if args.test_case == "all" else [args.test_case]
    all_passed = True
    if args.ca:
        def read(path):
            with open(path, "rb") as f:
                return f.read()
        creds = grpc.ssl_channel_credentials(
            root_certificates=read(args.ca),
            private_key=read(args.key) if args.key else None,
            certificate_chain=read(args.cert) if args.cert else None)
        channel = grpc.secure_channel(args.server, creds)
    else:
        channel = grpc.insecure_channel(args.server)
    with channel:
        interop = Interop(channel)
        for case in cases:
            try:
                why = getattr(interop, case)()
            except Exception as err:  # a malformed reply, for one
                why = "%s: %s" % (type(err).__name__, err)
            if why:
                why = why.replace("\r", "\\r").replace("\n", "\\n")
                print("FAIL %s: %s" % (case, why), flush=True)
                all_passed = False
            else:
                print("PASS %s" % case, flush=True)
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
