#!/usr/bin/python3
"""grpcio_client.py --server HOST:PORT --test_case all|NAME: a second reference client for our
gRPC server, on Debian's python3-grpcio (a C-core client, but not grpc++). It runs the unary
interop cases empty_unary, large_unary, custom_metadata, status_code_and_message and
unimplemented_method of gRPC's interop-test-descriptions.md against grpc.testing.TestService.

Debian ships no generated Python stubs (and grpcio-tools is not needed): the few messages are
encoded and decoded by hand below, and the calls go through channel.unary_unary() with bytes in
and out. Field numbers are those of grpc-proto's grpc/testing/messages.proto.

Prints "PASS <case>" or "FAIL <case>: <why>" per case; exits 0 only if every case passed (1
otherwise, 2 on bad usage). Every call has a 10 s deadline.
"""

import argparse
import sys

import grpc

DEADLINE_S = 10.0
REQUEST_SIZE = 271828
RESPONSE_SIZE = 314159
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
    """'' if a SimpleResponse's payload (field 1) is `size` zero bytes, else what is wrong."""
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
            if err.code().value[0] == code and err.details() == message:
                return ""
            return "UnaryCall: %s, expected status %d %r" % (describe(err), code, message)
        return "UnaryCall succeeded, expected status %d %r" % (code, message)

    def unimplemented_method(self):
        try:
            self.call("UnimplementedCall", b"")
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                return ""
            return ("grpc.testing.TestService/UnimplementedCall: %s, expected UNIMPLEMENTED (12)"
                    % describe(err))
        return "grpc.testing.TestService/UnimplementedCall succeeded, expected UNIMPLEMENTED"


# In the order `all` runs them.
CASES = ["empty_unary", "large_unary", "custom_metadata", "status_code_and_message",
         "unimplemented_method"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="HOST:PORT")
    parser.add_argument("--test_case", required=True, choices=["all"] + CASES)
    args = parser.parse_args()

    cases = CASES if args.test_case == "all" else [args.test_case]
    all_passed = True
    with grpc.insecure_channel(args.server) as channel:
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
