//! gcfaas Rust shim, compiled together with the function by build.sh. It serves one request at a
//! time over connections it opens to the runner's unix socket in GCFAAS_SOCKET (the runner listens,
//! the shim connects out, one connection per call); protocol in docs/runtimes.md. Every call carries
//! X-Gcfaas-Env, base64 of a JSON object of the function's environment variables and secrets: they
//! are set with std::env::set_var before the handler runs (and the header is taken off the
//! request). A container serves one configuration for its life.
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::panic;

const INVOCATION_HEADER: &str = "x-gcfaas-invocation";
const ENV_HEADER: &str = "x-gcfaas-env";
// GC-Storage values (up to 1 MiB) arrive base64-encoded in one header line.
const MAX_HEADER_LINE: u64 = 4 * 1024 * 1024;

fn main() {
    let path = std::env::var("GCFAAS_SOCKET").unwrap_or_else(|_| "/run/gcfaas/agent.sock".to_string());
    let mut config = EnvConfig { baseline: std::env::vars_os().collect(), applied: Vec::new() };
    loop {
        let stream = match UnixStream::connect(&path) {
            Ok(stream) => stream,
            Err(err) => {
                eprintln!("shim: cannot reach the runner ({:?})", err.kind());
                std::process::exit(1);
            }
        };
        // A broken exchange costs only that call.
        if let Err(err) = serve(stream, &mut config) {
            if err.get_ref().map_or(false, |e| e.is::<IncompleteRequest>()) {
                eprintln!("shim: IncompleteRequest");
            } else {
                eprintln!("shim: {:?}", err.kind());
            }
        }
    }
}

/// The runner's connection ended (or a line passed MAX_HEADER_LINE) inside a request. Never run as a
/// shorter request: the handler would see headers or a body cut short.
#[derive(Debug)]
struct IncompleteRequest;

impl std::fmt::Display for IncompleteRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IncompleteRequest")
    }
}

impl std::error::Error for IncompleteRequest {}

fn incomplete() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, IncompleteRequest)
}

/// One line of the request's head; None only for a connection closed before any byte.
fn read_line(reader: &mut BufReader<UnixStream>) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    reader.by_ref().take(MAX_HEADER_LINE).read_line(&mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if !line.ends_with('\n') {
        return Err(incomplete());
    }
    Ok(Some(line.trim_end_matches(|c| c == '\r' || c == '\n').to_string()))
}

/// The environment the process started with, and the names the last call's configuration set.
struct EnvConfig {
    baseline: HashMap<std::ffi::OsString, std::ffi::OsString>,
    applied: Vec<String>,
}

impl EnvConfig {
    /// Sets the call's configuration, undoing names an earlier call set and this one does not.
    fn apply(&mut self, encoded: &str) {
        let config = base64_decode(encoded).and_then(|raw| parse_string_object(&String::from_utf8_lossy(&raw))).unwrap_or_default();
        for name in self.applied.drain(..) {
            if config.iter().any(|(n, _)| *n == name) {
                continue;
            }
            match self.baseline.get(std::ffi::OsStr::new(&name)) {
                Some(value) => std::env::set_var(&name, value),
                None => std::env::remove_var(&name),
            }
        }
        for (name, value) in &config {
            if !name.is_empty() && !name.contains('=') && !name.contains('\0') && !value.contains('\0') {
                std::env::set_var(name, value);
                self.applied.push(name.clone());
            }
        }
    }
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// A JSON object whose values are all strings (what the runner sends), as name and value pairs.
fn parse_string_object(text: &str) -> Option<Vec<(String, String)>> {
    let mut chars = text.trim().chars().peekable();
    let mut out = Vec::new();
    if chars.next()? != '{' {
        return None;
    }
    skip_ws(&mut chars);
    if chars.peek() == Some(&'}') {
        return Some(out);
    }
    loop {
        skip_ws(&mut chars);
        let name = parse_json_string(&mut chars)?;
        skip_ws(&mut chars);
        if chars.next()? != ':' {
            return None;
        }
        skip_ws(&mut chars);
        let value = parse_json_string(&mut chars)?;
        out.push((name, value));
        skip_ws(&mut chars);
        match chars.next()? {
            ',' => continue,
            '}' => return Some(out),
            _ => return None,
        }
    }
}

fn skip_ws(chars: &mut std::iter::Peekable<std::str::Chars>) {
    while chars.peek().map_or(false, |c| c.is_whitespace()) {
        chars.next();
    }
}

fn parse_json_string(chars: &mut std::iter::Peekable<std::str::Chars>) -> Option<String> {
    if chars.next()? != '"' {
        return None;
    }
    let mut units: Vec<u16> = Vec::new();
    loop {
        let c = chars.next()?;
        match c {
            '"' => return Some(String::from_utf16_lossy(&units)),
            '\\' => {
                let escaped = match chars.next()? {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'u' => {
                        let hex: String = (0..4).filter_map(|_| chars.next()).collect();
                        units.push(u16::from_str_radix(&hex, 16).ok()?);
                        continue;
                    }
                    other => other,
                };
                let mut buf = [0u16; 2];
                units.extend_from_slice(escaped.encode_utf16(&mut buf));
            }
            _ => {
                let mut buf = [0u16; 2];
                units.extend_from_slice(c.encode_utf16(&mut buf));
            }
        }
    }
}

fn serve(stream: UnixStream, config: &mut EnvConfig) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let request_line = match read_line(&mut reader)? {
        Some(line) if !line.is_empty() => line,
        _ => return Ok(()),
    };
    let mut parts = request_line.splitn(3, ' ');
    let method = parts.next().unwrap_or("GET").to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    let mut invocation = String::new();
    let mut env_config = String::new();
    loop {
        let line = read_line(&mut reader)?.ok_or_else(incomplete)?;
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim().to_string();
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            }
            if name == INVOCATION_HEADER {
                invocation = value;
                continue;
            }
            if name == ENV_HEADER {
                env_config = value;
                continue;
            }
            headers.push((name, value));
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).map_err(|e| if e.kind() == std::io::ErrorKind::UnexpectedEof { incomplete() } else { e })?;
    let (path, query_string) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target.clone(), String::new()),
    };
    config.apply(&env_config);
    let request = gcfaas::Request { method, path, query_string, headers, body };

    // A panic is printed by the default hook (so it reaches the log) and becomes a 500.
    let response = match panic::catch_unwind(panic::AssertUnwindSafe(|| function::handle(request))) {
        Ok(Ok(response)) if (100..=599).contains(&response.status) => response,
        Ok(Ok(response)) => {
            let message = format!("status must be between 100 and 599, got {}", response.status);
            eprintln!("error: {}", message);
            failure(&message)
        }
        Ok(Err(err)) => {
            eprintln!("error: {}", err);
            failure(&err.to_string())
        }
        Err(payload) => failure(&format!("panic: {}", panic_message(&payload))),
    };

    let marker = format!("\x1eGCFAAS_END:{}\x1e\n", invocation);
    {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(marker.as_bytes());
        let _ = out.flush();
    }
    {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(marker.as_bytes());
        let _ = err.flush();
    }

    let reason = if response.status == 200 { "OK" } else { "Status" };
    let mut head = format!("HTTP/1.1 {} {}\r\n", response.status, reason);
    for (name, value) in &response.headers {
        let lower = name.to_ascii_lowercase();
        if lower == "content-length" || lower == "connection" || lower == "transfer-encoding" {
            continue;
        }
        head.push_str(&format!("{}: {}\r\n", name, value));
    }
    head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", response.body.len()));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&response.body);
    // One write for head and body: never split a response (see platform notes on Nagle).
    reader.into_inner().write_all(&bytes)
}

fn failure(message: &str) -> gcfaas::Response {
    gcfaas::Response::json(format!("{{\"error\":{}}}", gcfaas::json_string(message))).with_status(500)
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
