// JSON for plain return values on Mono (System.Web.Extensions); Json.dotnet.cs is the .NET 6 twin.
namespace Gcfaas.Shim
{
    static class Json
    {
        public static string Serialize(object value)
        {
            return new System.Web.Script.Serialization.JavaScriptSerializer().Serialize(value);
        }

        /// <summary>A JSON object of strings (the runner's configuration header); empty when it is not one.</summary>
        public static System.Collections.Generic.Dictionary<string, string> ParseStrings(string text)
        {
            var result = new System.Collections.Generic.Dictionary<string, string>();
            try
            {
                var parsed = new System.Web.Script.Serialization.JavaScriptSerializer { MaxJsonLength = int.MaxValue }
                    .Deserialize<System.Collections.Generic.Dictionary<string, object>>(text);
                if (parsed != null) foreach (var pair in parsed) if (pair.Value is string) result[pair.Key] = (string)pair.Value;
            }
            catch (System.Exception) { }
            return result;
        }

        public static string Quote(string text)
        {
            return Serialize(text ?? "");
        }
    }
}
