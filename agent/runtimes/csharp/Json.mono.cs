// JSON for plain return values on Mono (System.Web.Extensions); Json.dotnet.cs is the .NET 6 twin.
namespace Gcfaas.Shim
{
    static class Json
    {
        public static string Serialize(object value)
        {
            return new System.Web.Script.Serialization.JavaScriptSerializer().Serialize(value);
        }

        public static string Quote(string text)
        {
            return Serialize(text ?? "");
        }
    }
}
