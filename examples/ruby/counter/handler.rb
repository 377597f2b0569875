require "base64"

# Counts its calls in the function's storage: each call gets GC-Storage and answers the next value.
def handle(event, _context)
  stored = event.headers["gc-storage"]
  count = (stored.nil? || stored.empty? ? 0 : Base64.strict_decode64(stored).to_i) + 1
  {
    statusCode: 200,
    headers: { "GC-Storage" => Base64.strict_encode64(count.to_s) },
    body: { count: count }
  }
end
