// Request and response types of gcfaas C# functions, compiled together with the function and the shim.
using System;
using System.Collections.Generic;
using System.Text;

namespace Gcfaas
{
    /// <summary>The task's request. Header names are lowercase; a repeated query key keeps its last value.</summary>
    public class Request
    {
        public string Method { get; set; } = "GET";
        public string Path { get; set; } = "/";
        public string QueryString { get; set; } = "";
        public Dictionary<string, string> Query { get; } = new Dictionary<string, string>();
        public Dictionary<string, string> Headers { get; } = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        public byte[] BodyBytes { get; set; } = new byte[0];
        public string Body { get { return Encoding.UTF8.GetString(BodyBytes); } }
    }

    /// <summary>What a function answers. A handler may also return a string (text) or any object (JSON).</summary>
    public class Response
    {
        public int StatusCode { get; set; } = 200;
        public Dictionary<string, string> Headers { get; } = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        public byte[] BodyBytes { get; set; } = new byte[0];
        public string Body
        {
            get { return Encoding.UTF8.GetString(BodyBytes); }
            set { BodyBytes = Encoding.UTF8.GetBytes(value ?? ""); }
        }
    }
}
