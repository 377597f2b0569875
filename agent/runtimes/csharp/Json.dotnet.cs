// JSON for plain return values on .NET 6 (System.Text.Json); Json.mono.cs is the Mono twin.
namespace Gcfaas.Shim
{
    static class Json
    {
        public static string Serialize(object value)
        {
            return System.Text.Json.JsonSerializer.Serialize(value);
        }

        public static string Quote(string text)
        {
            return Serialize(text ?? "");
        }
    }
}
