// Pool-mode start of a Go function's container. The function and its shim are one binary, built
// per function, so a pooled container cannot start it ahead of time: this loader holds the
// container's place instead. It connects to the runner like a shim (the connection is the
// container's readiness), takes the init request naming the function (a body of GCFAAS_NAME=value
// lines), answers 204 and replaces itself with /function/handler, which then connects as usual.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const initAnswer = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

func main() {
	path := os.Getenv("GCFAAS_SOCKET")
	if path == "" {
		path = "/run/gcfaas/agent.sock"
	}
	dir := os.Getenv("GCFAAS_FUNCTION_DIR")
	if dir == "" {
		dir = "/function"
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		fail("cannot reach the runner", err)
	}
	body, err := readBody(bufio.NewReader(conn))
	if err != nil {
		fail("cannot read the init request", err)
	}
	for _, line := range strings.Split(body, "\n") {
		if name, value, ok := strings.Cut(line, "="); ok && strings.HasPrefix(name, "GCFAAS_") {
			os.Setenv(name, value)
		}
	}
	if _, err := io.WriteString(conn, initAnswer); err != nil {
		fail("cannot answer the init request", err)
	}
	conn.Close()
	handler := filepath.Join(dir, "handler")
	fail("cannot start "+handler, syscall.Exec(handler, []string{handler}, os.Environ()))
}

// readBody skips the request line and headers and returns the body Content-Length announces.
func readBody(r *bufio.Reader) (string, error) {
	length := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(name), "content-length") {
			if length, err = strconv.Atoi(strings.TrimSpace(value)); err != nil || length < 0 || length > 1<<16 {
				return "", fmt.Errorf("bad content-length %q", value)
			}
		}
	}
	buf := make([]byte, length)
	_, err := io.ReadFull(r, buf)
	return string(buf), err
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "loader: %s: %v\n", what, err)
	os.Exit(1)
}
