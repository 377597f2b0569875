// Reads the JSON body with the third-party Newtonsoft.Json library and answers with its keys.
using System.Collections.Generic;
using Gcfaas;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace Function
{
    public class FunctionHandler
    {
        public Response Handle(Request request)
        {
            var body = JObject.Parse(request.Body.Length == 0 ? "{}" : request.Body);
            var keys = new List<string>();
            foreach (var property in body.Properties()) keys.Add(property.Name);
            var response = new Response();
            response.Headers["Content-Type"] = "application/json";
            response.Body = JsonConvert.SerializeObject(new { keys = keys, count = keys.Count });
            return response;
        }
    }
}
