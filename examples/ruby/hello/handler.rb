# Greets the caller; shows how query, headers, body, status and errors travel.
def handle(event, _context)
  name = event.query.fetch("name", "world")
  raise "boom: failure requested by the caller" if event.query.key?("fail")

  puts "greeting #{name} (#{event.method} #{event.path})"
  {
    statusCode: Integer(event.query.fetch("status", "200")),
    headers: { "X-Greeting" => name },
    body: { message: "Hello, #{name}!", method: event.method, received: event.json, header: event.headers["x-test"] }
  }
end
