import { describe, expect, it } from "vitest";
import { CronError, instantOfLocal, nextRun, nextRuns, parseCron } from "../../shared/time/cron.js";

const at = (iso: string) => Date.parse(iso);
const isoOf = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");
const runs = (expr: string, zone: string, after: string, n = 3) => nextRuns(parseCron(expr), zone, at(after), n).map(isoOf);

describe("parseCron: the five fields", () => {
  it("expands *, lists, ranges, steps and names", () => {
    const c = parseCron("*/15 9-17/4 1,15,31 jan-MAR,Dec mon-fri");
    expect([...c.minute]).toEqual([0, 15, 30, 45]);
    expect([...c.hour]).toEqual([9, 13, 17]);
    expect([...c.dayOfMonth]).toEqual([1, 15, 31]);
    expect([...c.month]).toEqual([1, 2, 3, 12]);
    expect([...c.dayOfWeek]).toEqual([1, 2, 3, 4, 5]);
    expect({ dom: c.domRestricted, dow: c.dowRestricted }).toEqual({ dom: true, dow: true });
  });

  it("reads a start with a step as start-to-max, and day-of-week 7 as Sunday", () => {
    expect([...parseCron("5/20 * * * *").minute]).toEqual([5, 25, 45]);
    expect([...parseCron("0 0 * * 7").dayOfWeek]).toEqual([0]);
    expect([...parseCron("0 0 * * 5-7").dayOfWeek].sort()).toEqual([0, 5, 6]);
    expect([...parseCron("0 0 * * fri-sun").dayOfWeek].sort()).toEqual([0, 5, 6]);
    expect([...parseCron("0 0 * * sun-tue").dayOfWeek].sort()).toEqual([0, 1, 2]);
    expect([...parseCron("*/7 * * * *").minute]).toEqual([0, 7, 14, 21, 28, 35, 42, 49, 56]);
  });

  it.each([
    ["", /five fields/],
    ["* * * *", /five fields/],
    ["* * * * * *", /five fields/],
    ["60 * * * *", /minute field: 60 is outside 0-59/],
    ["* 24 * * *", /hour field: 24 is outside 0-23/],
    ["* * 0 * *", /day of month field: 0 is outside 1-31/],
    ["* * * 13 *", /month field: 13 is outside 1-12/],
    ["* * * * 8", /day of week field: 8 is outside 0-7/],
    ["* * * foo *", /month field: "foo" is not a number or a name/],
    ["x * * * *", /minute field: "x" is not a number/],
    ["*/0 * * * *", /minute field: step "0"/],
    ["*/a * * * *", /minute field: step "a"/],
    ["30-10 * * * *", /minute field: range 30-10 runs backwards/],
    ["1-2-3 * * * *", /minute field: "1-2-3" is not a range/],
    ["1,,2 * * * *", /minute field: "" is not a value/],
    ["-1 * * * *", /minute field/],
    ["0 0 30 feb *", /never run/],
    ["0 0 31 4,6,9,11 *", /never run/],
  ])("refuses %j naming the field", (expr, message) => {
    expect(() => parseCron(expr)).toThrow(CronError);
    expect(() => parseCron(expr)).toThrow(message);
  });

  it("accepts the 29th of February and a day that exists in some chosen month", () => {
    expect(() => parseCron("0 0 29 2 *")).not.toThrow();
    expect(() => parseCron("0 0 31 2,3 *")).not.toThrow();
    // With a day of the week as well, the days combine by OR: it runs on Mondays.
    expect(() => parseCron("0 0 30 2 mon")).not.toThrow();
  });
});

describe("nextRuns: a table of expressions and zones (clock injected)", () => {
  it.each([
    ["* * * * *", "UTC", "2026-11-23T10:15:30Z", ["2026-11-23T10:16:00Z", "2026-11-23T10:17:00Z", "2026-11-23T10:18:00Z"]],
    ["* * * * *", "UTC", "2026-11-23T10:16:00Z", ["2026-11-23T10:17:00Z", "2026-11-23T10:18:00Z", "2026-11-23T10:19:00Z"]],
    ["*/7 * * * *", "UTC", "2026-11-23T10:50:00Z", ["2026-11-23T10:56:00Z", "2026-11-23T11:00:00Z", "2026-11-23T11:07:00Z"]],
    ["0 9 * * mon-fri", "Europe/Paris", "2026-11-20T09:00:00Z", ["2026-11-23T08:00:00Z", "2026-11-24T08:00:00Z", "2026-11-25T08:00:00Z"]],
    ["30 8 1 * *", "Asia/Tokyo", "2026-11-23T00:00:00Z", ["2026-11-30T23:30:00Z", "2026-12-31T23:30:00Z", "2027-01-31T23:30:00Z"]],
    ["0 0 * * *", "Asia/Kolkata", "2026-11-23T00:00:00Z", ["2026-11-23T18:30:00Z", "2026-11-24T18:30:00Z", "2026-11-25T18:30:00Z"]],
    ["45 23 31 dec *", "Pacific/Kiritimati", "2026-01-01T00:00:00Z", ["2026-12-31T09:45:00Z", "2027-12-31T09:45:00Z", "2028-12-31T09:45:00Z"]],
    // Both day fields restricted: the 13th or any Friday.
    ["0 12 13 * fri", "UTC", "2026-11-01T00:00:00Z", ["2026-11-06T12:00:00Z", "2026-11-13T12:00:00Z", "2026-11-20T12:00:00Z"]],
    ["0 0 29 2 *", "UTC", "2026-11-23T00:00:00Z", ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"]],
    ["0 12 29 feb *", "America/New_York", "2028-02-29T17:00:00Z", ["2032-02-29T17:00:00Z", "2036-02-29T17:00:00Z", "2040-02-29T17:00:00Z"]],
  ])("%s in %s after %s", (expr, zone, after, expected) => {
    expect(runs(expr, zone, after)).toEqual(expected);
  });

  it("never returns a run at or before the clock", () => {
    const c = parseCron("*/7 * * * *");
    let t = at("2026-11-23T23:50:00Z");
    for (let i = 0; i < 30; i++) {
      const next = nextRun(c, "Europe/London", t)!;
      expect(next).toBeGreaterThan(t);
      t = next;
    }
    // */7 restarts at minute 0 every hour: 10:56 is followed by 11:00, not 11:03.
    expect(isoOf(t).slice(14, 16)).toMatch(/^(00|07|14|21|28|35|42|49|56)$/);
  });
});

describe("nextRuns across daylight-saving transitions", () => {
  it("Europe/London springs forward (2026-03-29, 01:00 → 02:00 BST): 01:30 does not exist and is skipped", () => {
    expect(instantOfLocal(2026, 3, 29, 1, 30, "Europe/London")).toBeNull();
    expect(runs("30 1 * * *", "Europe/London", "2026-03-28T00:00:00Z")).toEqual(["2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"]);
    expect(runs("*/30 * * * *", "Europe/London", "2026-03-29T00:15:00Z")).toEqual(["2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"]);
  });

  it("Europe/London falls back (2026-10-25, 02:00 BST → 01:00 GMT): 01:30 happens twice and runs once", () => {
    expect(runs("30 1 * * *", "Europe/London", "2026-10-24T12:00:00Z")).toEqual(["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z"]);
    // Every 20 minutes through the repeated hour: 01:00, 01:20, 01:40 once each, then 02:00 GMT.
    expect(runs("*/20 * * * *", "Europe/London", "2026-10-24T23:50:00Z", 5)).toEqual([
      "2026-10-25T00:00:00Z", "2026-10-25T00:20:00Z", "2026-10-25T00:40:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:20:00Z",
    ]);
    // A clock already inside the second 01:xx does not run the minutes that ran in the first.
    expect(runs("*/20 * * * *", "Europe/London", "2026-10-25T01:10:00Z", 1)).toEqual(["2026-10-25T02:00:00Z"]);
  });

  it("America/New_York springs forward (2026-03-08, 02:00 → 03:00 EDT): 02:xx is skipped", () => {
    expect(runs("15 2 * * *", "America/New_York", "2026-03-07T00:00:00Z")).toEqual(["2026-03-07T07:15:00Z", "2026-03-09T06:15:00Z", "2026-03-10T06:15:00Z"]);
    expect(runs("0 * * * *", "America/New_York", "2026-03-08T05:30:00Z")).toEqual(["2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"]);
  });

  it("Australia/Sydney springs forward in October (2026-10-04, 02:00 → 03:00 AEDT): 02:30 is skipped", () => {
    expect(runs("30 2 * * *", "Australia/Sydney", "2026-10-02T00:00:00Z")).toEqual(["2026-10-02T16:30:00Z", "2026-10-04T15:30:00Z", "2026-10-05T15:30:00Z"]);
  });

  it("America/New_York falls back (2026-11-01, 02:00 EDT → 01:00 EST): 01:30 runs once, at its first occurrence", () => {
    expect(runs("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z")).toEqual(["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z"]);
    expect(runs("0 * * * *", "America/New_York", "2026-11-01T04:30:00Z", 4)).toEqual(["2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z", "2026-11-01T09:00:00Z"]);
  });
});
