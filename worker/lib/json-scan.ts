/**
 * Says whether a text given in pieces is one JSON value, as `JSON.parse` would accept it, without
 * holding the text: a state machine over its characters with a stack of the open containers.
 */
export class JsonScanner {
  private mode: Mode = "value";
  private readonly stack: ("{" | "[")[] = [];
  private literal = "";
  private hex = 0;
  /** The string being read is an object's key (a colon follows it). */
  private inKey = false;
  private failed = false;

  write(text: string): void {
    for (let i = 0; i < text.length && !this.failed; i++) this.step(text.charCodeAt(i));
  }

  /** After the last piece: whether the whole text was exactly one JSON value. */
  end(): boolean {
    if (this.failed) return false;
    if (NUMBER_ENDS.has(this.mode)) this.mode = "after";
    return this.mode === "after" && this.stack.length === 0;
  }

  private fail(): void {
    this.failed = true;
  }

  private step(ch: number): void {
    switch (this.mode) {
      case "string":
        if (ch === QUOTE) this.mode = this.stringEnds();
        else if (ch === BACKSLASH) this.mode = "escape";
        else if (ch < 0x20) this.fail();
        return;
      case "escape":
        if (ch === 0x75 /* u */) {
          this.hex = 0;
          this.mode = "unicode";
        } else if (SIMPLE_ESCAPES.includes(ch)) this.mode = "string";
        else this.fail();
        return;
      case "unicode":
        if (!isHex(ch)) return this.fail();
        if (++this.hex === 4) this.mode = "string";
        return;
      case "literal":
        if (ch !== this.literal.charCodeAt(0)) return this.fail();
        this.literal = this.literal.slice(1);
        if (!this.literal) this.mode = "after";
        return;
      case "minus":
        if (ch === ZERO) this.mode = "zero";
        else if (isDigit(ch)) this.mode = "int";
        else this.fail();
        return;
      case "zero":
      case "int":
      case "fraction":
      case "exponent":
        if (this.numberGoesOn(ch)) return;
        this.mode = "after";
        return this.step(ch);
      case "point":
        if (isDigit(ch)) this.mode = "fraction";
        else this.fail();
        return;
      case "e":
        if (ch === PLUS || ch === MINUS) this.mode = "sign";
        else if (isDigit(ch)) this.mode = "exponent";
        else this.fail();
        return;
      case "sign":
        if (isDigit(ch)) this.mode = "exponent";
        else this.fail();
        return;
    }
    if (isSpace(ch)) return;
    switch (this.mode) {
      case "value":
      case "first-value":
        if (ch === CLOSE_ARRAY && this.mode === "first-value") return this.close("[");
        return this.value(ch);
      case "key":
      case "first-key":
        if (ch === CLOSE_OBJECT && this.mode === "first-key") return this.close("{");
        if (ch !== QUOTE) return this.fail();
        this.mode = "string";
        this.inKey = true;
        return;
      case "colon":
        if (ch !== COLON) return this.fail();
        this.mode = "value";
        return;
      case "after": {
        const top = this.stack.at(-1);
        if (ch === COMMA && top) this.mode = top === "{" ? "key" : "value";
        else if (ch === CLOSE_OBJECT && top === "{") this.close("{");
        else if (ch === CLOSE_ARRAY && top === "[") this.close("[");
        else this.fail();
        return;
      }
    }
  }

  private stringEnds(): Mode {
    if (!this.inKey) return "after";
    this.inKey = false;
    return "colon";
  }

  private value(ch: number): void {
    if (ch === QUOTE) this.mode = "string";
    else if (ch === OPEN_OBJECT) {
      this.stack.push("{");
      this.mode = "first-key";
    } else if (ch === OPEN_ARRAY) {
      this.stack.push("[");
      this.mode = "first-value";
    } else if (ch === MINUS) this.mode = "minus";
    else if (ch === ZERO) this.mode = "zero";
    else if (isDigit(ch)) this.mode = "int";
    else {
      const word = LITERALS.find((w) => w.charCodeAt(0) === ch);
      if (!word) return this.fail();
      this.literal = word.slice(1);
      this.mode = "literal";
    }
  }

  private close(kind: "{" | "["): void {
    if (this.stack.pop() !== kind) return this.fail();
    this.mode = "after";
  }

  /** Whether `ch` continues the number being read (moving its state on). */
  private numberGoesOn(ch: number): boolean {
    if (this.mode === "int" && isDigit(ch)) return true;
    if (this.mode === "fraction" && isDigit(ch)) return true;
    if (this.mode === "exponent") return isDigit(ch);
    if (ch === 0x2e /* . */ && (this.mode === "zero" || this.mode === "int")) {
      this.mode = "point";
      return true;
    }
    if (ch === 0x65 || ch === 0x45 /* e E */) {
      this.mode = "e";
      return true;
    }
    return false;
  }
}

type Mode = "value" | "first-value" | "key" | "first-key" | "colon" | "after" | "string" | "escape" | "unicode" | "literal" | "minus" | "zero" | "int" | "point" | "fraction" | "e" | "sign" | "exponent";

/** Where a number may end. */
const NUMBER_ENDS = new Set<Mode>(["zero", "int", "fraction", "exponent"]);
const LITERALS = ["true", "false", "null"];
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const ZERO = 0x30;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
/** " \ / b f n r t */
const SIMPLE_ESCAPES = [0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74];
const isDigit = (ch: number) => ch >= 0x30 && ch <= 0x39;
const isHex = (ch: number) => isDigit(ch) || (ch >= 0x61 && ch <= 0x66) || (ch >= 0x41 && ch <= 0x46);
const isSpace = (ch: number) => ch === 0x20 || ch === 0x09 || ch === 0x0a || ch === 0x0d;

/** A string as it appears between the quotes of a JSON string: escaping is per character, so pieces escape alone. */
export const jsonEscaped = (text: string): string => JSON.stringify(text).slice(1, -1);
