//! Request and response types of gcfaas Rust functions. A function is a library crate exposing
//! `pub fn handle(req: gcfaas::Request) -> Result<gcfaas::Response, gcfaas::Error>`; the runtime's
//! shim links it and serves it. Standard library only, so functions build with no network.

/// Any error; `?` converts from every `std::error::Error` and from strings.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The task's request. Header names are lowercase.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query_string: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// All query parameters, decoded, in order.
    pub fn query(&self) -> Vec<(String, String)> {
        parse_query(&self.query_string)
    }

    /// The first value of a query parameter.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query().into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What a function answers.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16) -> Self {
        Response { status, headers: Vec::new(), body: Vec::new() }
    }

    /// 200 with a text body.
    pub fn text(body: impl Into<String>) -> Self {
        Response::new(200).with_header("Content-Type", "text/plain; charset=utf-8").with_body(body.into().into_bytes())
    }

    /// 200 with a body that is already JSON text.
    pub fn json(raw_json: impl Into<String>) -> Self {
        Response::new(200).with_header("Content-Type", "application/json").with_body(raw_json.into().into_bytes())
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }
}

impl From<String> for Response {
    fn from(body: String) -> Self {
        Response::text(body)
    }
}

impl From<&str> for Response {
    fn from(body: &str) -> Self {
        Response::text(body)
    }
}

/// `s` as a JSON string literal, quotes included.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Decodes an `application/x-www-form-urlencoded` query string.
pub fn parse_query(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high * 16 + low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}
