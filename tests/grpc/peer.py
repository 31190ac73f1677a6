"""A real gRPC peer (Python grpcio) for tests/grpc.rs.

server IP      -- serve the test service on IP:<free port>, print the port
client TARGET [CA_PEM NAME]
               -- run every call through TARGET (h2c, or TLS with CA_PEM and
                  the name NAME), print one JSON line of results

The service works on raw bytes (no generated code), under /test.Echo/:
Unary (the bytes reversed, with trailing metadata x-trailer: done),
ServerStream (the request is a count N as text: N messages "msg-<i>"),
BidiStream (each message echoed upper-cased as it comes),
Fail (status INVALID_ARGUMENT, details "bad thing").
"""
import json
import sys
from concurrent import futures

import grpc

SVC = "test.Echo"
ident = lambda b: b  # noqa: E731 -- messages are raw bytes


def unary(req, ctx):
    ctx.set_trailing_metadata((("x-trailer", "done"),))
    return req[::-1]


def server_stream(req, ctx):
    for i in range(int(req.decode())):
        yield f"msg-{i}".encode()


def bidi(reqs, ctx):
    for r in reqs:
        yield r.upper()


def fail(req, ctx):
    ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad thing")


def serve(ip):
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, ident, ident),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream, ident, ident),
        "BidiStream": grpc.stream_stream_rpc_method_handler(bidi, ident, ident),
        "Fail": grpc.unary_unary_rpc_method_handler(fail, ident, ident),
    }
    opts = [("grpc.max_receive_message_length", 8 << 20), ("grpc.max_send_message_length", 8 << 20)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=opts)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SVC, handlers),))
    port = server.add_insecure_port(f"{ip}:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()  # until the test closes our stdin
    server.stop(0)


def client(target, ca=None, name=None):
    opts = [
        ("grpc.enable_http_proxy", 0),
        ("grpc.max_receive_message_length", 8 << 20),
        ("grpc.max_send_message_length", 8 << 20),
    ]
    if ca:
        opts.append(("grpc.ssl_target_name_override", name))
        creds = grpc.ssl_channel_credentials(open(ca, "rb").read())
        ch = grpc.secure_channel(target, creds, options=opts)
    else:
        ch = grpc.insecure_channel(target, options=opts)
    out = {}
    m = lambda kind, meth: getattr(ch, kind)(f"/{SVC}/{meth}", ident, ident)  # noqa: E731
    resp, call = m("unary_unary", "Unary").with_call(b"hello grpc", timeout=10)
    out["unary"] = resp.decode()
    out["unary_code"] = call.code().name
    out["unary_trailer"] = dict(call.trailing_metadata()).get("x-trailer")
    big = bytes(range(256)) * 4096  # 1 MiB
    resp = m("unary_unary", "Unary")(big, timeout=20)
    out["big_ok"] = resp == big[::-1]
    out["server_stream"] = [r.decode() for r in m("unary_stream", "ServerStream")(b"50", timeout=10)]
    reqs = iter([f"part-{i}".encode() for i in range(20)])
    out["bidi"] = [r.decode() for r in m("stream_stream", "BidiStream")(reqs, timeout=10)]
    try:
        m("unary_unary", "Fail")(b"x", timeout=10)
        out["fail"] = "no error"
    except grpc.RpcError as e:
        out["fail"] = [e.code().name, e.details()]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(sys.argv[2])
    else:
        client(*sys.argv[2:])
