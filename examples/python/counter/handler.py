import base64


def handle(event, context):
    """Counts its calls in the function's storage: each call gets GC-Storage and answers the next value."""
    stored = event.headers.get("gc-storage")
    count = (int(base64.b64decode(stored)) if stored else 0) + 1
    return {
        "statusCode": 200,
        "headers": {"GC-Storage": base64.b64encode(str(count).encode()).decode()},
        "body": {"count": count},
    }
