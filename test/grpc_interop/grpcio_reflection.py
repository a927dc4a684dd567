#!/usr/bin/python3
"""grpcio_reflection.py --server HOST:PORT --version v1|v1alpha --symbol NAME: asks a server's
gRPC reflection service what it serves, with Debian's python3-grpcio, encoding the requests by
hand (Debian ships no reflection stubs).

On one ServerReflectionInfo stream it sends list_services, then file_containing_symbol NAME,
then file_containing_symbol for a name nobody defines, and prints:
  SERVICE <name>                      for each listed service
  FILE <name> <package> <services>    for each FileDescriptorProto of the symbol's answer
                                      (parsed with python3-protobuf's descriptor_pb2; services
                                      as Svc:Method1,Method2 or '-')
  ERROR <code>                        for the unknown name's error_response
The call has a 20 s deadline. Exits 0 when all three answers came, 1 otherwise.
"""

import argparse
import sys

import grpc
from google.protobuf import descriptor_pb2

from grpcio_client import len_field  # (the interop client's encoder, beside this file)

# ServerReflectionRequest and ServerReflectionResponse field numbers (grpc.reflection.v1 and
# v1alpha are the same on the wire).
REQ_LIST_SERVICES = 7
REQ_FILE_CONTAINING_SYMBOL = 4
RSP_FILE_DESCRIPTOR_RESPONSE = 4
RSP_LIST_SERVICES_RESPONSE = 6
RSP_ERROR_RESPONSE = 7


def string_field(field, text):
    return len_field(field, text.encode())


def fields(data):
    """(field number, wire type, value) of a message's top-level fields."""
    i = 0
    while i < len(data):
        key, i = read_varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(data, i)
        elif wire == 2:
            n, i = read_varint(data, i)
            value, i = data[i:i + n], i + n
        else:
            raise ValueError("unexpected wire type %d" % wire)
        yield field, wire, value


def read_varint(data, i):
    shift = n = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, i
        shift += 7


def describe(rsp):
    lines = []
    for field, _, value in fields(rsp):
        if field == RSP_LIST_SERVICES_RESPONSE:
            for _, _, service in fields(value):  # repeated ServiceResponse service = 1
                for f, _, name in fields(service):
                    if f == 1:
                        lines.append("SERVICE %s" % name.decode())
        elif field == RSP_FILE_DESCRIPTOR_RESPONSE:
            for _, _, raw in fields(value):  # repeated bytes file_descriptor_proto = 1
                fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
                services = " ".join("%s:%s" % (s.name, ",".join(m.name for m in s.method))
                                    for s in fd.service) or "-"
                lines.append("FILE %s %s %s" % (fd.name, fd.package, services))
        elif field == RSP_ERROR_RESPONSE:
            for f, _, code in fields(value):
                if f == 1:
                    lines.append("ERROR %d" % code)
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="HOST:PORT")
    parser.add_argument("--version", choices=["v1", "v1alpha"], default="v1")
    parser.add_argument("--symbol", required=True)
    args = parser.parse_args()
    requests = [string_field(REQ_LIST_SERVICES, ""),
                string_field(REQ_FILE_CONTAINING_SYMBOL, args.symbol),
                string_field(REQ_FILE_CONTAINING_SYMBOL, "no.such.Symbol")]
    method = "/grpc.reflection.%s.ServerReflection/ServerReflectionInfo" % args.version
    answers = 0
    with grpc.insecure_channel(args.server) as channel:
        call = channel.stream_stream(method)(iter(requests), timeout=20)
        try:
            for rsp in call:
                answers += 1
                for line in describe(rsp):
                    print(line, flush=True)
        except grpc.RpcError as err:
            print("RPC %s %s" % (err.code().name, err.details()), flush=True)
    return 0 if answers == len(requests) else 1


if __name__ == "__main__":
    sys.exit(main())
