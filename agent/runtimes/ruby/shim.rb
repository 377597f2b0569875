# gcfaas Ruby shim: loads /function/handler.rb once and serves one request at a time over
# connections it opens to the runner's unix socket in GCFAAS_SOCKET (the runner listens, the shim
# connects out, one connection per call). Protocol shared by all shims: see docs/runtimes.md.
# Pool mode (GCFAAS_POOL=1): the container starts with an empty /function; its first exchange is the
# init (a body of GCFAAS_NAME=value lines), after which calls are served.
# Configuration: every call carries X-Gcfaas-Env, base64 of a JSON object of the function's
# environment variables and secrets, set in ENV before the handler runs (and taken off the event).
# The handler loads at the first call, after they are set: code that reads ENV when handler.rb
# loads sees them, and a container serves one configuration for its life.
require "base64"
require "json"
require "socket"
require "uri"

$stdout.sync = true
$stderr.sync = true

FUNCTION_DIR = ENV.fetch("GCFAAS_FUNCTION_DIR", "/function")
SOCKET_PATH = ENV.fetch("GCFAAS_SOCKET", "/run/gcfaas/agent.sock")
# GC-Storage values (up to 1 MiB) arrive base64-encoded in one header line.
MAX_HEADER_LINE = 4 * 1024 * 1024
INVOCATION_HEADER = "x-gcfaas-invocation"
ENV_HEADER = "x-gcfaas-env"
# The environment the container started with: a name the configuration no longer sets goes back to it.
BASELINE_ENV = ENV.to_h.freeze
$applied_env = []
$loaded = false

# Sets the call's configuration in ENV, undoing names an earlier call set and this one does not.
def apply_env(encoded)
  config = begin
    parsed = encoded.to_s.empty? ? {} : JSON.parse(Base64.decode64(encoded))
    parsed.is_a?(Hash) ? parsed : {}
  rescue JSON::ParserError
    {}
  end
  ($applied_env - config.keys).each { |name| BASELINE_ENV.key?(name) ? ENV[name] = BASELINE_ENV[name] : ENV.delete(name) }
  config.each { |name, value| ENV[name] = value.to_s }
  $applied_env = config.keys
end

def ensure_loaded
  return if $loaded

  $loaded = true
  $handler_receiver, $load_error = load_handler
end
STATUS_TEXT = { 200 => "OK", 500 => "Internal Server Error" }.freeze

# What the handler receives as `event`.
class Event
  attr_reader :method, :path, :query, :headers, :body, :raw_body

  # `raw_body` is the exact bytes the caller sent (a binary String); `body` is them as UTF-8 text.
  def initialize(method, path, query, headers, raw_body)
    @method = method
    @path = path
    @query = query
    @headers = headers
    @raw_body = raw_body.b
    @body = raw_body.dup.force_encoding(Encoding::UTF_8)
  end

  # The body parsed as JSON, or nil when it is empty or not JSON.
  def json
    @body.empty? ? nil : JSON.parse(@body)
  rescue JSON::ParserError
    nil
  end
end

# What the handler receives as `context`.
Context = Struct.new(:request_id, :function_id, :build_id, :timeout, :memory_mib, :hostname, keyword_init: true)

def load_handler
  if File.exist?(File.join(FUNCTION_DIR, "Gemfile"))
    ENV["BUNDLE_GEMFILE"] = File.join(FUNCTION_DIR, "Gemfile")
    require "bundler/setup"
  end
  $LOAD_PATH.unshift(FUNCTION_DIR)
  load File.join(FUNCTION_DIR, "handler.rb")
  return [nil, "handler.rb does not define handle(event, context)"] unless Object.private_method_defined?(:handle) || Object.method_defined?(:handle)

  [TOPLEVEL_BINDING.receiver, nil]
rescue Exception => e # rubocop:disable Lint/RescueException -- a failed load must not end the shim
  [nil, ([e.full_message(highlight: false)]).join]
end

INIT_ANSWER = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

def parse_query(raw)
  URI.decode_www_form(raw).each_with_object({}) do |(key, value), query|
    query[key] = query.key?(key) ? [*query[key], value] : value
  end
rescue ArgumentError
  {}
end

def encode_body(body)
  case body
  when nil then ["", nil]
  when String
    body.encoding == Encoding::BINARY ? [body, "application/octet-stream"] : [body, "text/plain; charset=utf-8"]
  else [JSON.generate(body), "application/json"]
  end
end

def response?(value)
  return false unless value.is_a?(Hash)

  keys = value.keys.map(&:to_s)
  keys.include?("statusCode") && (keys - %w[statusCode headers body]).empty?
end

def to_response(value)
  status = 200
  headers = {}
  body = value
  if response?(value)
    fetch = ->(key) { value.key?(key) ? value[key] : value[key.to_sym] }
    status = Integer(fetch.call("statusCode"))
    raise ArgumentError, "statusCode must be between 100 and 599, got #{status}" unless (100..599).cover?(status)
    (fetch.call("headers") || {}).each { |k, v| headers[k.to_s] = v.to_s }
    body = fetch.call("body")
  end
  bytes, content_type = encode_body(body)
  headers["Content-Type"] = content_type if content_type && headers.keys.none? { |k| k.downcase == "content-type" }
  [status, headers, bytes]
end

def failure(message)
  [500, { "Content-Type" => "application/json" }, JSON.generate({ error: message })]
end

def run_handler(event, context)
  unless $handler_receiver
    warn $load_error
    return failure("handler failed to load")
  end
  to_response($handler_receiver.send(:handle, event, context))
rescue Exception => e # rubocop:disable Lint/RescueException -- one bad call must not end the warm container
  warn e.full_message(highlight: false)
  failure(e.message)
end

# The runner's connection ended (or a line passed MAX_HEADER_LINE) inside a request. Never handled
# as a shorter request: the handler would run on headers or a body cut short.
class IncompleteRequest < StandardError; end

# One line of the request's head; nil only for a connection closed before any byte.
def read_line(client)
  line = client.gets("\r\n", MAX_HEADER_LINE)
  return nil if line.nil?
  raise IncompleteRequest unless line.end_with?("\n")

  line.chomp("\r\n")
end

def read_request(client)
  request_line = read_line(client)
  return nil if request_line.nil? # closed before a request: the container is being removed

  method, target, = request_line.strip.split(" ", 3)
  headers = {}
  loop do
    line = read_line(client)
    raise IncompleteRequest if line.nil?
    break if line.empty?

    name, value = line.split(":", 2)
    name = name.strip.downcase
    value = value.to_s.strip
    headers[name] = headers.key?(name) ? "#{headers[name]}, #{value}" : value
  end
  length = headers.fetch("content-length", "0").to_i
  body = length.positive? ? client.read(length).to_s : +""
  raise IncompleteRequest unless body.bytesize == length

  [method, target, headers, body.force_encoding(Encoding::UTF_8)]
end

def serve(client)
  parsed = read_request(client)
  return unless parsed

  method, target, headers, body = parsed
  invocation = headers.delete(INVOCATION_HEADER).to_s
  apply_env(headers.delete(ENV_HEADER))
  ensure_loaded
  path, raw_query = target.split("?", 2)
  event = Event.new(method, path, parse_query(raw_query.to_s), headers, body)
  context = Context.new(
    request_id: invocation, function_id: ENV.fetch("GCFAAS_FUNCTION_ID", ""), build_id: ENV.fetch("GCFAAS_BUILD_ID", ""),
    timeout: ENV.fetch("GCFAAS_TIMEOUT", "0").to_f, memory_mib: ENV.fetch("GCFAAS_MEMORY_MIB", "0").to_i, hostname: Socket.gethostname
  )
  status, out_headers, out_body = run_handler(event, context)
  marker = "\x1eGCFAAS_END:#{invocation}\x1e\n"
  $stdout.write(marker)
  $stderr.write(marker)
  out_body = out_body.b
  lines = ["HTTP/1.1 #{status} #{STATUS_TEXT.fetch(status, 'Status')}"]
  out_headers.each do |name, value|
    lines << "#{name}: #{value}" unless %w[content-length connection transfer-encoding].include?(name.downcase)
  end
  lines << "Content-Length: #{out_body.bytesize}" << "Connection: close"
  # One write for head and body: never split a response (see platform notes on Nagle).
  client.write("#{lines.join("\r\n")}\r\n\r\n".b + out_body)
ensure
  client.close
end

# Pool mode's first exchange: the function's variables, set before its code loads.
def take_init
  client = UNIXSocket.new(SOCKET_PATH)
  parsed = read_request(client)
  (parsed ? parsed[3] : "").each_line do |line|
    name, value = line.chomp.split("=", 2)
    ENV[name] = value.to_s if name.start_with?("GCFAAS_")
  end
  # The handler loads at the first call, once its configuration is in ENV.
  client.write(INIT_ANSWER)
ensure
  client&.close
end

take_init if ENV["GCFAAS_POOL"] == "1"

# A runner that cannot be reached ends the shim (UNIXSocket.new raises); a broken exchange costs
# only that call.
loop do
  client = UNIXSocket.new(SOCKET_PATH)
  begin
    serve(client)
  rescue StandardError => e
    warn "shim: #{e.class}"
  end
end
