//! Converts the `text` query parameter to several cases with the vendored third-party `heck` crate.
use gcfaas::{json_string, Error, Request, Response};
use heck::{ToKebabCase, ToSnakeCase, ToUpperCamelCase};

pub fn handle(req: Request) -> Result<Response, Error> {
    let text = req.query_param("text").ok_or("query parameter `text` is required")?;
    Ok(Response::json(format!(
        "{{\"snake\":{},\"kebab\":{},\"camel\":{}}}",
        json_string(&text.to_snake_case()),
        json_string(&text.to_kebab_case()),
        json_string(&text.to_upper_camel_case())
    )))
}
