//! Greets the caller; shows how query, headers, body, status and errors travel.
use gcfaas::{json_string, Error, Request, Response};

pub fn handle(req: Request) -> Result<Response, Error> {
    let name = req.query_param("name").unwrap_or_else(|| "world".to_string());
    if req.query_param("fail").is_some() {
        return Err("boom: failure requested by the caller".into());
    }
    let status: u16 = req.query_param("status").map(|s| s.parse()).transpose()?.unwrap_or(200);
    println!("greeting {} ({} {})", name, req.method, req.path);

    // The body is JSON already (the API guarantees it), so it is embedded as is.
    let body = req.body_text();
    let received = if body.trim().is_empty() { "null".to_string() } else { body };
    let header = req.header("x-test").map(json_string).unwrap_or_else(|| "null".to_string());
    let json = format!(
        "{{\"message\":{},\"method\":{},\"received\":{},\"header\":{}}}",
        json_string(&format!("Hello, {}!", name)),
        json_string(&req.method),
        received,
        header
    );
    Ok(Response::json(json).with_status(status).with_header("X-Greeting", name))
}
