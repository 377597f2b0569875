// Turns a duration such as "2 days" into milliseconds with the third-party `ms` package.
const ms = require("ms");

module.exports = async (event) => {
  const input = event.query.duration || "1h";
  return { input, milliseconds: ms(input) };
};
