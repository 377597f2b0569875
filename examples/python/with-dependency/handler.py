from tabulate import tabulate


def handle(event, context):
    """Renders the query parameters as a text table with the third-party `tabulate` package."""
    rows = sorted(event.query.items())
    return tabulate(rows, headers=["name", "value"], tablefmt="github")
