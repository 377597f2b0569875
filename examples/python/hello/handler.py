def handle(event, context):
    """Greets the caller; shows how query, headers, body, status and errors travel."""
    name = event.query.get("name", "world")
    if "fail" in event.query:
        raise RuntimeError("boom: failure requested by the caller")
    print(f"greeting {name} ({event.method} {event.path})")
    return {
        "statusCode": int(event.query.get("status", "200")),
        "headers": {"X-Greeting": name},
        "body": {
            "message": f"Hello, {name}!",
            "method": event.method,
            "received": event.json,
            "header": event.headers.get("x-test"),
        },
    }
