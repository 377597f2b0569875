require "mustache"

# Renders a greeting with the third-party `mustache` gem.
def handle(event, _context)
  Mustache.render("Hello, {{name}}! You sent {{count}} query parameters.",
                  name: event.query.fetch("name", "world"), count: event.query.size)
end
