import { describe, expect, it } from "vitest";
import { localDay, localMinutes, nextLocalMidnight, withinWindow } from "../../shared/time/local-time.js";

const at = (iso: string) => Date.parse(iso);

describe("local time in an endpoint's time zone", () => {
  it("gives the local calendar day far from UTC", () => {
    // 10:30 UTC is already the next day in Kiritimati (UTC+14) and still the previous one in Pago Pago (UTC-11).
    expect(localDay(at("2026-11-21T10:30:00Z"), "Pacific/Kiritimati")).toBe("2026-11-22");
    expect(localDay(at("2026-11-21T10:30:00Z"), "Pacific/Pago_Pago")).toBe("2026-11-20");
    expect(localMinutes(at("2026-11-21T10:30:00Z"), "Pacific/Kiritimati")).toBe(30);
  });

  it("finds the next local midnight on ordinary and daylight-saving days", () => {
    expect(new Date(nextLocalMidnight(at("2026-11-21T10:30:00Z"), "UTC")).toISOString()).toBe("2026-11-22T00:00:00.000Z");
    expect(new Date(nextLocalMidnight(at("2026-11-21T10:30:00Z"), "Asia/Tokyo")).toISOString()).toBe("2026-11-21T15:00:00.000Z");
    // New York springs forward on 2026-03-08: that day has 23 hours; midnight after is 04:00Z (EDT).
    expect(new Date(nextLocalMidnight(at("2026-03-08T06:00:00Z"), "America/New_York")).toISOString()).toBe("2026-03-09T04:00:00.000Z");
    // and falls back on 2026-11-01: a 25-hour day; the midnight after is 05:00Z (EST).
    expect(new Date(nextLocalMidnight(at("2026-11-01T04:30:00Z"), "America/New_York")).toISOString()).toBe("2026-11-02T05:00:00.000Z");
  });

  it("applies windows with `from` inclusive and `to` exclusive", () => {
    expect(withinWindow(9 * 60, "09:00", "17:00")).toBe(true);
    expect(withinWindow(17 * 60, "09:00", "17:00")).toBe(false);
    expect(withinWindow(8 * 60 + 59, "09:00", "17:00")).toBe(false);
  });

  it("wraps windows past midnight, and treats equal ends as all day", () => {
    expect(withinWindow(23 * 60, "22:00", "06:00")).toBe(true);
    expect(withinWindow(2 * 60, "22:00", "06:00")).toBe(true);
    expect(withinWindow(6 * 60, "22:00", "06:00")).toBe(false);
    expect(withinWindow(12 * 60, "22:00", "06:00")).toBe(false);
    expect(withinWindow(12 * 60, "08:00", "08:00")).toBe(true);
  });
});
