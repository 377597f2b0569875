// Counts its calls in the function's storage: each call gets GC-Storage and answers the next value.
module.exports = async (event) => {
  const stored = event.headers["gc-storage"];
  const count = (stored ? Number(Buffer.from(stored, "base64").toString()) : 0) + 1;
  return {
    statusCode: 200,
    headers: { "GC-Storage": Buffer.from(String(count)).toString("base64") },
    body: { count },
  };
};
