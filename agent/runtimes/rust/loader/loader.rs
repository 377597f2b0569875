//! Pool-mode start of a Rust function's container. The function and its shim are one binary, built
//! per function, so a pooled container cannot start it ahead of time: this loader holds the
//! container's place instead. It connects to the runner like a shim (the connection is the
//! container's readiness), takes the init request naming the function (a body of GCFAAS_NAME=value
//! lines), answers 204 and replaces itself with /function/handler, which then connects as usual.
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;

const INIT_ANSWER: &[u8] = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

fn main() {
    let path = std::env::var("GCFAAS_SOCKET").unwrap_or_else(|_| "/run/gcfaas/agent.sock".to_string());
    let dir = std::env::var("GCFAAS_FUNCTION_DIR").unwrap_or_else(|_| "/function".to_string());
    let stream = UnixStream::connect(&path).unwrap_or_else(|e| fail("cannot reach the runner", e));
    let mut writer = stream.try_clone().unwrap_or_else(|e| fail("cannot use the connection", e));
    let body = read_body(&mut BufReader::new(stream)).unwrap_or_else(|e| fail("cannot read the init request", e));
    let mut command = Command::new(format!("{}/handler", dir));
    for line in body.lines() {
        if let Some((name, value)) = line.split_once('=') {
            if name.starts_with("GCFAAS_") {
                command.env(name, value);
            }
        }
    }
    writer.write_all(INIT_ANSWER).unwrap_or_else(|e| fail("cannot answer the init request", e));
    drop(writer);
    // exec returns only when it failed.
    fail("cannot start the handler", command.exec());
}

/// Skips the request line and headers and returns the body Content-Length announces.
fn read_body(reader: &mut BufReader<UnixStream>) -> std::io::Result<String> {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.by_ref().take(64 * 1024).read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end_matches(|c| c == '\r' || c == '\n');
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
                if length > 65536 {
                    return Err(std::io::ErrorKind::InvalidData.into());
                }
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

fn fail<E: std::fmt::Debug>(what: &str, err: E) -> ! {
    eprintln!("loader: {}: {:?}", what, err);
    std::process::exit(1);
}
