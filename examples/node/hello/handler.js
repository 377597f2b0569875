// Greets the caller; shows how query, headers, body, status and errors travel.
module.exports = async (event, context) => {
  const name = event.query.name || "world";
  if ("fail" in event.query) throw new Error("boom: failure requested by the caller");
  console.log(`greeting ${name} (${event.method} ${event.path})`);
  return {
    statusCode: Number(event.query.status || 200),
    headers: { "X-Greeting": name },
    body: {
      message: `Hello, ${name}!`,
      method: event.method,
      received: event.json ?? null,
      header: event.headers["x-test"] ?? null,
    },
  };
};
