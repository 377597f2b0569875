import type { Lang } from "../../../agent/runtimes/languages.js";
import type { ZipItem } from "../../support/zip.js";

/**
 * A function that probes the network from inside its sandbox, in Python and Go.
 * - `?mode=probe`, body a JSON list of "host:port" (IPv6 as "[addr]:port"): tries each with TCP
 *   (3 s), sends an HTTP/1.0 GET, answers {target: "ok <body>" | "refused <error>"}.
 * - `?mode=ifaces`: the names of its network interfaces.
 * - `?mode=caps` (Python): the effective capability mask, hex, from /proc/self/status.
 * - `?mode=listen`: starts a TCP server on 0.0.0.0:9000 (once per container) and answers its own
 *   address, for a second function to try to reach.
 */
export const probeHandlers: Partial<Record<Lang, ZipItem[]>> = {
  py: [{ name: "handler.py", data: `import json, socket, threading

_listening = []

def _serve():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", 9000))
    srv.listen(8)
    while True:
        conn, _ = srv.accept()
        conn.sendall(b"HTTP/1.0 200 OK\\r\\n\\r\\nanother function\\n")
        conn.close()

def probe(target):
    host, port = target.rsplit(":", 1)
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        s.sendall(b"GET / HTTP/1.0\\r\\nHost: probe\\r\\n\\r\\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return "ok " + data.decode(errors="replace").split("\\r\\n\\r\\n", 1)[-1].strip()
    except Exception as e:
        return "refused " + type(e).__name__ + ": " + str(e)
    finally:
        s.close()

def handle(event, context):
    mode = event.query.get("mode", "probe")
    if mode == "ifaces":
        return json.dumps(sorted(name for _, name in socket.if_nameindex()))
    if mode == "caps":
        with open("/proc/self/status") as f:
            return next(l.split()[1] for l in f if l.startswith("CapEff:"))
    if mode == "listen":
        if not _listening:
            threading.Thread(target=_serve, daemon=True).start()
            _listening.append(True)
        return socket.gethostbyname(socket.gethostname())
    return json.dumps({t: probe(t) for t in event.json})
` }],
  go: [{ name: "handler.go", data: `package function

import (
	"encoding/json"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	handler "github.com/openfaas/templates-sdk/go-http"
)

var listenOnce sync.Once

func probe(target string) string {
	conn, err := net.DialTimeout("tcp", target, 3*time.Second)
	if err != nil {
		return "refused " + err.Error()
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	io.WriteString(conn, "GET / HTTP/1.0\\r\\nHost: probe\\r\\n\\r\\n")
	data, _ := io.ReadAll(conn)
	parts := strings.SplitN(string(data), "\\r\\n\\r\\n", 2)
	return "ok " + strings.TrimSpace(parts[len(parts)-1])
}

func Handle(req handler.Request) (handler.Response, error) {
	q, _ := url.ParseQuery(req.QueryString)
	switch q.Get("mode") {
	case "ifaces":
		ifs, _ := net.Interfaces()
		names := []string{}
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		sort.Strings(names)
		b, _ := json.Marshal(names)
		return handler.Response{StatusCode: 200, Body: b}, nil
	case "listen":
		listenOnce.Do(func() {
			l, err := net.Listen("tcp", "0.0.0.0:9000")
			if err != nil {
				return
			}
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					io.WriteString(c, "HTTP/1.0 200 OK\\r\\n\\r\\nanother function\\n")
					c.Close()
				}
			}()
		})
		host, _ := os.Hostname()
		addrs, _ := net.LookupHost(host)
		return handler.Response{StatusCode: 200, Body: []byte(strings.Join(addrs, ","))}, nil
	}
	var targets []string
	if err := json.Unmarshal(req.Body, &targets); err != nil {
		return handler.Response{StatusCode: 400, Body: []byte(err.Error())}, nil
	}
	out := map[string]string{}
	for _, t := range targets {
		out[t] = probe(t)
	}
	b, _ := json.Marshal(out)
	return handler.Response{StatusCode: 200, Body: b}, nil
}
` }],
};
