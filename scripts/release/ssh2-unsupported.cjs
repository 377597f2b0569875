// Stands in for the ssh2 package in the bundled agent: docker-modem loads ssh2 at start only to
// reach Docker hosts over ssh://, which the agent never does (it talks to the local socket), and
// ssh2's optional native add-ons cannot travel inside one JavaScript file.
"use strict";
class Client {
  constructor() {
    throw new Error("the bundled gcfaas agent cannot reach Docker over ssh://; use the local socket (DOCKER_HOST=unix://...)");
  }
}
module.exports = { Client };
