// Pool-mode start of a C# function's container. The function, SDK and shim compile into one
// handler.exe per function, so a pooled container cannot start it ahead of time; this loader starts
// Mono instead, connects to the runner like a shim (the connection is the container's readiness),
// takes the init request naming the function (a body of GCFAAS_NAME=value lines), answers 204 and
// runs /function/handler.exe in the already started runtime, which then connects as usual.
using System;
using System.IO;
using System.Net.Sockets;
using System.Reflection;
using System.Text;

namespace Gcfaas.Loader
{
    public static class Program
    {
        const string InitAnswer = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

        public static int Main()
        {
            var path = Environment.GetEnvironmentVariable("GCFAAS_SOCKET") ?? "/run/gcfaas/agent.sock";
            var dir = Environment.GetEnvironmentVariable("GCFAAS_FUNCTION_DIR") ?? "/function";
            // What every handler.exe loads first: paid while the container waits in the pool.
            Assembly.Load("System.Web.Extensions, Version=4.0.0.0, Culture=neutral, PublicKeyToken=31bf3856ad364e35");
            using (var client = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified))
            {
                try { client.Connect(new UnixDomainSocketEndPoint(path)); }
                catch (SocketException e)
                {
                    Console.Error.WriteLine("loader: cannot reach the runner (" + e.SocketErrorCode + ")");
                    return 1;
                }
                using (var stream = new NetworkStream(client))
                {
                    foreach (var line in ReadBody(stream).Split('\n'))
                    {
                        var at = line.IndexOf('=');
                        if (at > 0 && line.StartsWith("GCFAAS_", StringComparison.Ordinal))
                            Environment.SetEnvironmentVariable(line.Substring(0, at), line.Substring(at + 1));
                    }
                    var answer = Encoding.ASCII.GetBytes(InitAnswer);
                    stream.Write(answer, 0, answer.Length);
                }
            }
            return AppDomain.CurrentDomain.ExecuteAssembly(Path.Combine(dir, "handler.exe"));
        }

        // Skips the request line and headers and returns the body Content-Length announces.
        static string ReadBody(Stream stream)
        {
            var length = 0;
            for (var line = ReadLine(stream); line.Length > 0; line = ReadLine(stream))
            {
                var colon = line.IndexOf(':');
                if (colon > 0 && line.Substring(0, colon).Trim().Equals("content-length", StringComparison.OrdinalIgnoreCase))
                    length = Math.Min(int.Parse(line.Substring(colon + 1).Trim()), 65536);
            }
            var body = new byte[length];
            for (var read = 0; read < length;)
            {
                var n = stream.Read(body, read, length - read);
                if (n <= 0) throw new EndOfStreamException("the init request ended early");
                read += n;
            }
            return Encoding.UTF8.GetString(body);
        }

        static string ReadLine(Stream stream)
        {
            var line = new StringBuilder();
            for (int b = stream.ReadByte(); b != -1 && b != '\n'; b = stream.ReadByte())
                if (b != '\r') line.Append((char)b);
            return line.ToString();
        }
    }
}
