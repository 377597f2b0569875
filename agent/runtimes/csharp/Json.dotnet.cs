// JSON for plain return values on .NET 6 (System.Text.Json); Json.mono.cs is the Mono twin.
namespace Gcfaas.Shim
{
    static class Json
    {
        public static string Serialize(object value)
        {
            return System.Text.Json.JsonSerializer.Serialize(value);
        }

        /// <summary>A JSON object of strings (the runner's configuration header); empty when it is not one.</summary>
        public static System.Collections.Generic.Dictionary<string, string> ParseStrings(string text)
        {
            try
            {
                return System.Text.Json.JsonSerializer.Deserialize<System.Collections.Generic.Dictionary<string, string>>(text)
                    ?? new System.Collections.Generic.Dictionary<string, string>();
            }
            catch (System.Exception)
            {
                return new System.Collections.Generic.Dictionary<string, string>();
            }
        }

        public static string Quote(string text)
        {
            return Serialize(text ?? "");
        }
    }
}
