import { describe, expect, it } from "vitest";
import { clientAddress, forwardedHttps, trustedProxiesFrom } from "../../scripts/lib/client-address-proxy.js";

describe("the local server's client address", () => {
  const none = trustedProxiesFrom(undefined);
  const lb = trustedProxiesFrom("10.0.0.2, ::ffff:10.0.0.3, not-an-address");

  it("is the connection's address, whatever X-Forwarded-For claims, without trusted proxies", () => {
    expect(clientAddress("::ffff:127.0.0.1", "203.0.113.7", none)).toBe("127.0.0.1");
    expect(clientAddress("::1", undefined, none)).toBe("::1");
  });

  it("behind a trusted proxy, is the nearest forwarded hop that is not a trusted proxy", () => {
    expect([...lb]).toEqual(["10.0.0.2", "10.0.0.3"]);
    // The client wrote 6.6.6.6 itself; the load balancer appended the address it saw.
    expect(clientAddress("10.0.0.2", "6.6.6.6, 198.51.100.4", lb)).toBe("198.51.100.4");
    expect(clientAddress("10.0.0.2", "198.51.100.4, 10.0.0.3", lb)).toBe("198.51.100.4");
    expect(clientAddress("10.0.0.2", undefined, lb)).toBe("10.0.0.2");
    expect(clientAddress("10.0.0.2", "junk, 198.51.100.4", lb)).toBe("198.51.100.4");
    expect(clientAddress("10.0.0.2", "198.51.100.4, junk", lb)).toBe("10.0.0.2");
    // A caller that is not a trusted proxy cannot forward for anyone.
    expect(clientAddress("198.51.100.9", "10.0.0.2", lb)).toBe("198.51.100.9");
  });
});

describe("the local server's idea of https", () => {
  const lb = trustedProxiesFrom("10.0.0.2");

  it("believes X-Forwarded-Proto from a trusted proxy only, and only the entry that proxy wrote", () => {
    expect(forwardedHttps("10.0.0.2", "https", lb)).toBe(true);
    expect(forwardedHttps("::ffff:10.0.0.2", "HTTPS", lb)).toBe(true);
    expect(forwardedHttps("10.0.0.2", "http, https", lb)).toBe(true);
    expect(forwardedHttps("10.0.0.2", "https, http", lb)).toBe(false);
    expect(forwardedHttps("10.0.0.2", undefined, lb)).toBe(false);
    // A client that is not a trusted proxy says what it likes; it proves nothing.
    expect(forwardedHttps("198.51.100.9", "https", lb)).toBe(false);
    expect(forwardedHttps("10.0.0.2", "https", trustedProxiesFrom(undefined))).toBe(false);
  });
});
