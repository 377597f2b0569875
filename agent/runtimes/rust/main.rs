//! gcfaas Rust shim, compiled together with the function by build.sh. It serves one request at a
//! time over connections it opens to the runner's unix socket in GCFAAS_SOCKET (the runner listens,
//! the shim connects out, one connection per call); protocol in docs/runtimes.md.
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::panic;

const INVOCATION_HEADER: &str = "x-gcfaas-invocation";
// GC-Storage values (up to 1 MiB) arrive base64-encoded in one header line.
const MAX_HEADER_LINE: u64 = 4 * 1024 * 1024;

fn main() {
    let path = std::env::var("GCFAAS_SOCKET").unwrap_or_else(|_| "/run/gcfaas/agent.sock".to_string());
    loop {
        let stream = match UnixStream::connect(&path) {
            Ok(stream) => stream,
            Err(err) => {
                eprintln!("shim: cannot reach the runner ({:?})", err.kind());
                std::process::exit(1);
            }
        };
        // A broken exchange costs only that call.
        if let Err(err) = serve(stream) {
            eprintln!("shim: {:?}", err.kind());
        }
    }
}

fn read_line(reader: &mut BufReader<UnixStream>) -> std::io::Result<String> {
    let mut line = String::new();
    reader.by_ref().take(MAX_HEADER_LINE).read_line(&mut line)?;
    Ok(line.trim_end_matches(|c| c == '\r' || c == '\n').to_string())
}

fn serve(stream: UnixStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let request_line = read_line(&mut reader)?;
    if request_line.is_empty() {
        return Ok(());
    }
    let mut parts = request_line.splitn(3, ' ');
    let method = parts.next().unwrap_or("GET").to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    let mut invocation = String::new();
    loop {
        let line = read_line(&mut reader)?;
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
            headers.push((name, value));
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let (path, query_string) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target.clone(), String::new()),
    };
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
