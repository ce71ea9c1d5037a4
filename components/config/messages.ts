// Schema problems in the project's own words. zod's default messages ("Too small: expected number to
// be >0", "Invalid key in record") are replaced here for every issue whose schema gives no message of
// its own, so no generic validator phrasing reaches the operator.
import type { z } from "zod";

/** How a value of a JSON type is named to someone writing YAML. */
const TYPE_WORDS: Record<string, string> = {
  object: "a mapping",
  record: "a mapping",
  array: "a list",
  tuple: "a list",
  string: "text",
  number: "a number",
  int: "a whole number",
  integer: "a whole number",
  boolean: "true or false",
  null: "nothing",
};

/** `a mapping`, `a list`, … for a JSON type name; the name itself when unknown. */
export function typeWord(type: string): string {
  return TYPE_WORDS[type] ?? type;
}

const plural = (n: number | bigint, one: string, many: string) =>
  `${n} ${Number(n) === 1 ? one : many}`;

/** A list of allowed values, quoted as they would be written. */
export function allowedValues(values: readonly unknown[]): string {
  return values.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join(", ");
}

function tooSmall(issue: {
  origin: string;
  minimum: number | bigint;
  inclusive?: boolean;
}): string {
  const { origin, minimum, inclusive } = issue;
  switch (origin) {
    case "array":
    case "set":
      return Number(minimum) <= 1 ? "must not be empty" : `list at least ${minimum} entries`;
    case "string":
      return Number(minimum) <= 1
        ? "must not be empty"
        : `must be at least ${plural(minimum, "character", "characters")} long`;
    default:
      return inclusive === false
        ? `must be greater than ${minimum}`
        : `must be at least ${minimum}`;
  }
}

function tooBig(issue: { origin: string; maximum: number | bigint; inclusive?: boolean }): string {
  const { origin, maximum, inclusive } = issue;
  switch (origin) {
    case "array":
    case "set":
      return `list at most ${maximum} entries`;
    case "string":
      return `must be at most ${plural(maximum, "character", "characters")} long`;
    default:
      return inclusive === false ? `must be less than ${maximum}` : `must be at most ${maximum}`;
  }
}

/**
 * The message for a zod issue raised by a schema that gave none of its own. Pass it as the `error`
 * option of `safeParse`, so schema-level messages still win.
 */
function zodMessage(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined ? "required" : `expected ${typeWord(issue.expected)}`;
    case "too_small":
      return tooSmall(issue);
    case "too_big":
      return tooBig(issue);
    case "invalid_value":
      return `expected one of ${allowedValues(issue.values)}`;
    case "invalid_format":
      return issue.format === "url"
        ? "expected a URL such as https://host.example.net"
        : issue.format === "regex"
          ? "is not written in the expected form"
          : `expected ${issue.format === "email" ? "an email address" : `a ${issue.format}`}`;
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    case "unrecognized_keys":
      return "unknown key";
    case "invalid_key":
      return "has a key that is not allowed here";
    case "invalid_union":
      return "does not match any of the forms allowed here";
    case "invalid_element":
      return "has an entry that is not allowed here";
    case "custom":
      return "is not allowed here";
    default:
      return "is not allowed here";
  }
}

/** Options for `safeParse` that word every issue in the project's terms. */
export const PARSE_OPTIONS = { error: zodMessage } as const;
