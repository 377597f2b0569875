// gcfaas C# shim: creates Function.FunctionHandler once and serves one request at a time over
// connections it opens to the runner's unix socket in GCFAAS_SOCKET (the runner listens, the shim
// connects out, one connection per call). Protocol shared by all shims: see docs/runtimes.md.
// Configuration: every call carries X-Gcfaas-Env, base64 of a JSON object of the function's
// environment variables and secrets, set with Environment.SetEnvironmentVariable before the handler
// runs (and taken off the request). The handler is created at the first call, after they are set,
// so its constructor sees them; a container serves one configuration for its life.
using System;
using System.Collections;
using System.Collections.Generic;
using System.IO;
using System.Net.Sockets;
using System.Reflection;
using System.Text;
using System.Threading.Tasks;

namespace Gcfaas.Shim
{
    // The runner's connection ended (or a line passed 4 MiB) inside a request. Never run as a
    // shorter request: the handler would see headers or a body cut short.
    public class IncompleteRequest : Exception { }

    public static class Program
    {
        const string InvocationHeader = "x-gcfaas-invocation";
        const string EnvHeader = "x-gcfaas-env";

        static bool loaded;
        static object handler;
        static MethodInfo handle;
        static string loadError;
        // The environment the process started with: a name the configuration no longer sets goes back to it.
        static readonly IDictionary baselineEnv = Environment.GetEnvironmentVariables();
        static List<string> appliedEnv = new List<string>();

        static void EnsureLoaded()
        {
            if (loaded) return;
            loaded = true;
            try
            {
                var type = Type.GetType("Function.FunctionHandler", true);
                handler = Activator.CreateInstance(type);
                handle = type.GetMethod("Handle", new[] { typeof(Request) });
                if (handle == null) loadError = "Function.FunctionHandler has no Handle(Gcfaas.Request) method";
            }
            catch (Exception e)
            {
                loadError = (e.InnerException ?? e).ToString();
            }
        }

        /// <summary>Sets the call's configuration, undoing names an earlier call set and this one does not.</summary>
        static void ApplyEnv(string encoded)
        {
            Dictionary<string, string> config;
            try { config = Json.ParseStrings(Encoding.UTF8.GetString(Convert.FromBase64String(encoded ?? ""))); }
            catch (FormatException) { config = new Dictionary<string, string>(); }
            foreach (var name in appliedEnv)
                if (!config.ContainsKey(name)) Environment.SetEnvironmentVariable(name, baselineEnv.Contains(name) ? (string)baselineEnv[name] : null);
            appliedEnv = new List<string>();
            foreach (var pair in config)
            {
                Environment.SetEnvironmentVariable(pair.Key, pair.Value);
                appliedEnv.Add(pair.Key);
            }
        }

        public static void Main()
        {
            var path = Environment.GetEnvironmentVariable("GCFAAS_SOCKET") ?? "/run/gcfaas/agent.sock";
            var runner = new UnixDomainSocketEndPoint(path);
            while (true)
            {
                using (var client = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified))
                {
                    try { client.Connect(runner); }
                    catch (SocketException e)
                    {
                        Console.Error.WriteLine("shim: cannot reach the runner (" + e.SocketErrorCode + ")");
                        Environment.Exit(1);
                    }
                    // A broken exchange costs only that call.
                    try { Serve(client); }
                    catch (Exception e) { Console.Error.WriteLine("shim: " + e.GetType().Name); }
                }
            }
        }

        static void Serve(Socket client)
        {
            using (var stream = new NetworkStream(client))
            {
                string invocation, env;
                // Buffered: the request is read a byte at a time up to each line end (headers may carry
                // a GC-Storage value of a megabyte or more).
                var request = ReadRequest(new BufferedStream(stream, 65536), out invocation, out env);
                if (request == null) return;
                ApplyEnv(env);
                EnsureLoaded();
                var response = Run(request);
                var marker = "\u001eGCFAAS_END:" + invocation + "\u001e\n";
                Console.Out.Write(marker);
                Console.Out.Flush();
                Console.Error.Write(marker);
                Console.Error.Flush();
                var head = new StringBuilder();
                head.Append("HTTP/1.1 ").Append(response.StatusCode).Append(response.StatusCode == 200 ? " OK" : " Status").Append("\r\n");
                foreach (var header in response.Headers)
                {
                    var lower = header.Key.ToLowerInvariant();
                    if (lower == "content-length" || lower == "connection" || lower == "transfer-encoding") continue;
                    head.Append(header.Key).Append(": ").Append(header.Value).Append("\r\n");
                }
                head.Append("Content-Length: ").Append(response.BodyBytes.Length).Append("\r\nConnection: close\r\n\r\n");
                var headBytes = Encoding.UTF8.GetBytes(head.ToString());
                var all = new byte[headBytes.Length + response.BodyBytes.Length];
                Buffer.BlockCopy(headBytes, 0, all, 0, headBytes.Length);
                Buffer.BlockCopy(response.BodyBytes, 0, all, headBytes.Length, response.BodyBytes.Length);
                // One write for head and body: never split a response (see platform notes on Nagle).
                stream.Write(all, 0, all.Length);
            }
        }

        static Response Run(Request request)
        {
            if (loadError != null)
            {
                Console.Error.WriteLine(loadError);
                return Failure("handler failed to load");
            }
            try
            {
                var result = handle.Invoke(handler, new object[] { request });
                var task = result as Task;
                if (task != null)
                {
                    task.GetAwaiter().GetResult();
                    var property = task.GetType().GetProperty("Result");
                    result = property == null ? null : property.GetValue(task);
                }
                var response = ToResponse(result);
                if (response.StatusCode < 100 || response.StatusCode > 599)
                    throw new ArgumentOutOfRangeException("StatusCode", "status code must be between 100 and 599, got " + response.StatusCode);
                return response;
            }
            catch (Exception e)
            {
                var error = e is TargetInvocationException && e.InnerException != null ? e.InnerException : e;
                Console.Error.WriteLine(error.ToString());
                return Failure(error.Message);
            }
        }

        static Response ToResponse(object result)
        {
            var response = result as Response;
            if (response != null) return response;
            response = new Response();
            if (result == null) return response;
            var text = result as string;
            if (text != null)
            {
                response.Headers["Content-Type"] = "text/plain; charset=utf-8";
                response.Body = text;
                return response;
            }
            response.Headers["Content-Type"] = "application/json";
            response.Body = Json.Serialize(result);
            return response;
        }

        static Response Failure(string message)
        {
            var response = new Response { StatusCode = 500 };
            response.Headers["Content-Type"] = "application/json";
            response.Body = "{\"error\":" + Json.Quote(message) + "}";
            return response;
        }

        static Request ReadRequest(Stream stream, out string invocation, out string env)
        {
            invocation = "";
            env = "";
            var requestLine = ReadLine(stream);
            if (string.IsNullOrEmpty(requestLine)) return null;
            var parts = requestLine.Split(new[] { ' ' }, 3);
            var request = new Request { Method = parts[0] };
            var target = parts.Length > 1 ? parts[1] : "/";
            var q = target.IndexOf('?');
            request.Path = q < 0 ? target : target.Substring(0, q);
            request.QueryString = q < 0 ? "" : target.Substring(q + 1);
            foreach (var pair in request.QueryString.Split('&'))
            {
                if (pair.Length == 0) continue;
                var eq = pair.IndexOf('=');
                var key = Uri.UnescapeDataString((eq < 0 ? pair : pair.Substring(0, eq)).Replace('+', ' '));
                request.Query[key] = eq < 0 ? "" : Uri.UnescapeDataString(pair.Substring(eq + 1).Replace('+', ' '));
            }
            var length = 0;
            string line;
            while (true)
            {
                line = ReadLine(stream);
                if (line == null) throw new IncompleteRequest();
                if (line.Length == 0) break;
                var colon = line.IndexOf(':');
                if (colon < 0) continue;
                var name = line.Substring(0, colon).Trim().ToLowerInvariant();
                var value = line.Substring(colon + 1).Trim();
                if (name == "content-length") int.TryParse(value, out length);
                if (name == InvocationHeader) { invocation = value; continue; }
                if (name == EnvHeader) { env = value; continue; }
                request.Headers[name] = request.Headers.ContainsKey(name) ? request.Headers[name] + ", " + value : value;
            }
            var body = new byte[length];
            var read = 0;
            while (read < length)
            {
                var n = stream.Read(body, read, length - read);
                if (n <= 0) throw new IncompleteRequest();
                read += n;
            }
            request.BodyBytes = body;
            return request;
        }

        // A line without its end is a request cut short; null only for a connection closed before any byte.
        static string ReadLine(Stream stream)
        {
            var bytes = new List<byte>();
            int b;
            while ((b = stream.ReadByte()) != -1 && bytes.Count < 4 * 1024 * 1024)
            {
                if (b == '\n') return Encoding.UTF8.GetString(bytes.ToArray());
                if (b != '\r') bytes.Add((byte)b);
            }
            if (b == -1 && bytes.Count == 0) return null;
            throw new IncompleteRequest();
        }
    }
}
