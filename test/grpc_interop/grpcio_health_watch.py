#!/usr/bin/python3
"""grpcio_health_watch.py --server HOST:PORT --ready FILE [--service NAME]: watches a server's
health with Debian's python3-grpcio, as a load balancer would: grpc.health.v1.Health/Watch.

Prints one line per status the server sends ("SERVING", "NOT_SERVING", ...), creating FILE after
the first (so the test knows when to stop the server), then "END <code>" with the gRPC status
code that ended the call (e.g. "END UNAVAILABLE"). Debian ships no generated stubs: the messages
are encoded and decoded by hand (HealthCheckRequest: service = 1, a string;
HealthCheckResponse: status = 1, an enum). The call has a 20 s deadline, so a run cannot hang.
Exits 0 when the call ended with a status (whatever it was), 1 on a malformed reply.
"""

import argparse
import sys

import grpc

STATUS_NAMES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def encode_request(service):
    data = service.encode()
    if not data:
        return b""
    assert len(data) < 128
    return bytes([0x0A, len(data)]) + data  # field 1, length-delimited


def decode_status(data):
    if data == b"":
        return 0  # proto3: the default value is not sent
    if len(data) == 2 and data[0] == 0x08 and data[1] < 128:  # field 1, varint
        return data[1]
    raise ValueError("not a HealthCheckResponse: %r" % data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="HOST:PORT")
    parser.add_argument("--ready", required=True, help="created after the first status")
    parser.add_argument("--service", default="", help="the service to watch ('' = the server)")
    args = parser.parse_args()
    with grpc.insecure_channel(args.server) as channel:
        watch = channel.unary_stream("/grpc.health.v1.Health/Watch")
        call = watch(encode_request(args.service), timeout=20)
        try:
            first = True
            for msg in call:
                status = decode_status(msg)
                print(STATUS_NAMES.get(status, str(status)), flush=True)
                if first:
                    open(args.ready, "w").close()
                    first = False
        except grpc.RpcError:
            pass  # the code is printed below
        except ValueError as err:
            print("FAIL %s" % err, flush=True)
            return 1
        print("END %s" % call.code().name, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
