"""gcfaas Python shim: loads /function/handler.py once and serves one request at a time.

Protocol (shared by every language's shim, see docs/runtimes.md): the runner listens on the unix
socket named by GCFAAS_SOCKET and the shim connects to it, then reads one HTTP/1.1 request from
that connection and writes the response; one connection per call. The runner tags each request with
X-Gcfaas-Invocation; after the handler finishes, the shim writes an end marker carrying that id to
stdout and to stderr, so the runner can cut the container's output into per-invocation logs.

Pool mode (GCFAAS_POOL=1): the container starts before any function is chosen, with an empty
/function. Its first connection carries the init request (POST /.gcfaas/init, a body of
GCFAAS_NAME=value lines): the shim takes those variables, answers 204 and then serves calls as
above, loading the handler the runner has just put in /function at the first.

Configuration: every call carries X-Gcfaas-Env, base64 of a JSON object of the function's
environment variables and secrets. The shim sets them in os.environ before the handler runs (and
takes the header off the event). The handler loads at the first call, after they are set, so a
module that reads os.environ at import sees them; a container serves one configuration for life.
"""
import asyncio
import base64
import importlib
import inspect
import io
import json
import os
import socket
import socketserver  # StreamRequestHandler only: the shim connects out, it never listens
import sys
import traceback
import urllib.parse

FUNCTION_DIR = os.environ.get("GCFAAS_FUNCTION_DIR", "/function")
SOCKET_PATH = os.environ.get("GCFAAS_SOCKET", "/run/gcfaas/agent.sock")
INVOCATION_HEADER = "x-gcfaas-invocation"
ENV_HEADER = "x-gcfaas-env"
MARKER = "\x1eGCFAAS_END:{}\x1e\n"
# GC-Storage values (up to 1 MiB) arrive base64-encoded in one header line.
MAX_HEADER_LINE = 4 * 1024 * 1024

INIT_ANSWER = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def whole_writes(stream):
    """The stream again, over a buffered writer that writes every byte it is given.

    Under PYTHONUNBUFFERED the text stream writes straight to the raw file, and a raw write may
    take only part of the bytes. gVisor does that when the pipe to the runner is full (runc never
    does), and the text layer ignores the rest: a function printing a lot lost part of its output.
    A BufferedWriter retries until all is written. Line buffering keeps lines timely; the end
    marker's flush sends any unfinished last line.
    """
    raw = io.FileIO(stream.fileno(), "w", closefd=False)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors, line_buffering=True)


sys.stdout = whole_writes(sys.stdout)
sys.stderr = whole_writes(sys.stderr)


class Event:
    def __init__(self, method, path, query, headers, raw_body):
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        # The exact bytes the caller sent (files, images, anything); `body` is them as text.
        self.raw_body = raw_body
        self.body = raw_body.decode("utf-8", "replace")

    @property
    def json(self):
        """The body parsed as JSON, or None when it is empty or not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


class Context:
    def __init__(self, request_id):
        self.request_id = request_id
        self.function_id = os.environ.get("GCFAAS_FUNCTION_ID", "")
        self.build_id = os.environ.get("GCFAAS_BUILD_ID", "")
        self.timeout = float(os.environ.get("GCFAAS_TIMEOUT", "0") or 0)
        self.memory_mib = int(os.environ.get("GCFAAS_MEMORY_MIB", "0") or 0)
        self.hostname = socket.gethostname()


def load_handler():
    # Only now: in pool mode /function was empty until init, and the import system caches what
    # a sys.path folder held when it first looked.
    sys.path.insert(0, os.path.join(FUNCTION_DIR, ".python_packages"))
    sys.path.insert(0, FUNCTION_DIR)
    importlib.invalidate_caches()
    try:
        import handler  # noqa: E402 - path set above

        fn = getattr(handler, "handle", None)
        if not callable(fn):
            return None, "handler.py does not define handle(event, context)"
        return fn, None
    except BaseException:  # a failing import must not kill the shim: every call reports it
        return None, traceback.format_exc()


HANDLE, LOAD_ERROR, LOADED = None, "the handler is not loaded", False
# The environment the container started with: a name the configuration no longer sets goes back to it.
BASELINE_ENV = dict(os.environ)
APPLIED_ENV = set()


def apply_env(encoded):
    """Sets the call's configuration in os.environ, undoing names an earlier call set and this one does not."""
    global APPLIED_ENV
    try:
        config = json.loads(base64.b64decode(encoded)) if encoded else {}
    except ValueError:
        config = {}
    if not isinstance(config, dict):
        config = {}
    for name in APPLIED_ENV - set(config):
        if name in BASELINE_ENV:
            os.environ[name] = BASELINE_ENV[name]
        else:
            os.environ.pop(name, None)
    for name, value in config.items():
        os.environ[name] = str(value)
    APPLIED_ENV = set(config)


def ensure_loaded():
    global HANDLE, LOAD_ERROR, LOADED
    if not LOADED:
        HANDLE, LOAD_ERROR = load_handler()
        LOADED = True


def parse_query(raw):
    query = {}
    for key, value in urllib.parse.parse_qsl(raw, keep_blank_values=True):
        if key in query:
            previous = query[key]
            query[key] = previous + [value] if isinstance(previous, list) else [previous, value]
        else:
            query[key] = value
    return query


def encode_body(body):
    """Returns (bytes, default content type) for a handler's body value."""
    if body is None:
        return b"", None
    if isinstance(body, (bytes, bytearray)):
        return bytes(body), "application/octet-stream"
    if isinstance(body, str):
        return body.encode("utf-8"), "text/plain; charset=utf-8"
    return json.dumps(body).encode("utf-8"), "application/json"


def is_response(value):
    return isinstance(value, dict) and "statusCode" in value and set(value) <= {"statusCode", "headers", "body"}


def to_response(value):
    if is_response(value):
        status = int(value["statusCode"])
        if not 100 <= status <= 599:
            raise ValueError("statusCode must be between 100 and 599, got {}".format(status))
        headers = {str(k): str(v) for k, v in (value.get("headers") or {}).items()}
        body, content_type = encode_body(value.get("body"))
    else:
        status, headers = 200, {}
        body, content_type = encode_body(value)
    if content_type and not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = content_type
    return status, headers, body


def run_handler(event, context):
    if HANDLE is None:
        sys.stderr.write(LOAD_ERROR.rstrip("\n") + "\n")
        return 500, {"Content-Type": "application/json"}, json.dumps({"error": "handler failed to load"}).encode()
    try:
        result = HANDLE(event, context)
        if inspect.isawaitable(result):
            result = asyncio.run(result)
        return to_response(result)
    except BaseException as err:  # SystemExit included: one bad call must not end the warm container
        traceback.print_exc()
        message = str(err) or type(err).__name__
        return 500, {"Content-Type": "application/json"}, json.dumps({"error": message}).encode()


class IncompleteRequest(Exception):
    """The runner's connection ended (or a line passed MAX_HEADER_LINE) inside a request.

    Never handled as a shorter request: the handler would run on headers or a body cut short.
    """


def read_line(rfile):
    """One line of the request's head; None only for a connection closed before any byte."""
    line = rfile.readline(MAX_HEADER_LINE)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise IncompleteRequest()
    return line.decode("latin-1").rstrip("\r\n")


def read_request(rfile):
    first = read_line(rfile)
    if first is None:
        return None  # closed before a request: the container is being removed
    method, target, _version = first.split(" ", 2)
    headers = {}
    while True:
        line = read_line(rfile)
        if line is None:
            raise IncompleteRequest()
        if not line:
            break
        name, _, value = line.partition(":")
        name = name.strip().lower()
        value = value.strip()
        headers[name] = headers[name] + ", " + value if name in headers else value
    length = int(headers.get("content-length", "0") or 0)
    body = rfile.read(length) if length else b""
    if len(body) != length:
        raise IncompleteRequest()
    return method, target, headers, body


STATUS_TEXT = {200: "OK", 500: "Internal Server Error"}


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        parsed = read_request(self.rfile)
        if parsed is None:
            return
        method, target, headers, raw_body = parsed
        invocation = headers.pop(INVOCATION_HEADER, "")
        apply_env(headers.pop(ENV_HEADER, ""))
        ensure_loaded()
        path, _, raw_query = target.partition("?")
        event = Event(method, path, parse_query(raw_query), headers, raw_body)
        status, out_headers, body = run_handler(event, Context(invocation))
        for stream in (sys.stdout, sys.stderr):
            stream.write(MARKER.format(invocation))
            stream.flush()
        lines = ["HTTP/1.1 {} {}".format(status, STATUS_TEXT.get(status, "Status"))]
        for name, value in out_headers.items():
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                lines.append("{}: {}".format(name, value))
        lines.append("Content-Length: {}".format(len(body)))
        lines.append("Connection: close")
        # One write for head and body: never split a response (see platform notes on Nagle).
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace") + body)


def take_init():
    """Pool mode: the first exchange names the function; its variables are set before it loads."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(SOCKET_PATH)
        with conn.makefile("rb") as rfile:
            parsed = read_request(rfile)
        for line in (parsed[3] if parsed else b"").decode("utf-8", "replace").splitlines():
            name, _, value = line.partition("=")
            if name.startswith("GCFAAS_"):
                os.environ[name] = value
        # The handler loads at the first call, once its configuration is in os.environ.
        conn.sendall(INIT_ANSWER)


def main():
    if os.environ.get("GCFAAS_POOL") == "1":
        take_init()
    # Connecting is cheap, and the next connection is open before the next call comes: no delay.
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(SOCKET_PATH)
            try:
                Handler(conn, SOCKET_PATH, None)
            except Exception as err:  # a broken exchange costs that call, never the warm container
                sys.stderr.write("shim: {}\n".format(type(err).__name__))


if __name__ == "__main__":
    main()
