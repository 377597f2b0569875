// Greets the caller; shows how query, headers, body, status and errors travel.
using System;
using Gcfaas;

namespace Function
{
    public class FunctionHandler
    {
        public Response Handle(Request request)
        {
            string name;
            if (!request.Query.TryGetValue("name", out name)) name = "world";
            if (request.Query.ContainsKey("fail")) throw new InvalidOperationException("boom: failure requested by the caller");
            string status;
            var code = request.Query.TryGetValue("status", out status) ? int.Parse(status) : 200;
            Console.WriteLine("greeting {0} ({1} {2})", name, request.Method, request.Path);

            string header;
            var body = request.Body.Trim();
            var response = new Response { StatusCode = code };
            response.Headers["Content-Type"] = "application/json";
            response.Headers["X-Greeting"] = name;
            // The body is JSON already (the API guarantees it), so it is embedded as is.
            response.Body = "{\"message\":" + Quote("Hello, " + name + "!") + ",\"method\":" + Quote(request.Method)
                + ",\"received\":" + (body.Length == 0 ? "null" : body)
                + ",\"header\":" + (request.Headers.TryGetValue("x-test", out header) ? Quote(header) : "null") + "}";
            return response;
        }

        static string Quote(string s)
        {
            return "\"" + s.Replace("\\", "\\\\").Replace("\"", "\\\"") + "\"";
        }
    }
}
