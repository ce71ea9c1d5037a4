// Values copied from an example and never replaced: documentation addresses (RFC 5737's 192.0.2.0/24,
// 198.51.100.0/24 and 203.0.113.0/24, RFC 3849's 2001:db8::/32) and documentation MACs (RFC 7042's
// 00:00:5e:00:53:00 to :ff). Valid, so a warning: `validate` prints it (an unchanged example would
// otherwise be "ready to preview"); the program itself does not log it.
import { inSubnet, ipFamily, isMac, parseCidr } from "../../net";
import { type KeyPath, keyOf } from "../problems";
import type { Rule } from "./rule";

/** The documentation ranges, as written in messages. */
const DOCUMENTATION_RANGES = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"];
const DOCUMENTATION_CIDRS = DOCUMENTATION_RANGES.map((range) => parseCidr(range)!);
/** RFC 7042's unicast documentation block. */
const DOCUMENTATION_MAC = /^00[:-]00[:-]5e[:-]00[:-]53[:-][0-9a-f]{2}$/i;

/** Whether a value as written is a documentation address, prefix or MAC. */
function isExampleValue(value: string): boolean {
  if (isMac(value)) return DOCUMENTATION_MAC.test(value);
  const ip = ipFamily(value) !== undefined ? value : parseCidr(value)?.ip;
  return ip !== undefined && DOCUMENTATION_CIDRS.some((cidr) => inSubnet(ip, cidr));
}

/** Every text value of `value` that is an example value, with its key. */
function exampleValuesIn(value: unknown, path: KeyPath, found: { key: string; value: string }[]) {
  if (typeof value === "string") {
    if (isExampleValue(value)) found.push({ key: keyOf(path), value });
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => exampleValuesIn(item, [...path, i], found));
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) exampleValuesIn(item, [...path, key], found);
  }
}

/** What the example-values warning says, to tell it from the others. */
const EXAMPLE_VALUE = "is an example value (a documentation address or MAC)";

/** Whether a warning line is the example-values one (the repository's own stacks hold such values). */
export function isExampleValuesWarning(line: string): boolean {
  return line.includes(`: ${EXAMPLE_VALUE}`);
}

/** How many keys a warning names before "and N more". */
const NAMED = 3;

/** A stack that still holds example values gets one warning naming where. */
export const exampleValues: Rule = ({ raw }, problems) => {
  const found: { key: string; value: string }[] = [];
  for (const section of ["cluster", "nodes", "proxmox", "oci", "openstack", "dns"]) {
    exampleValuesIn(raw[section], [section], found);
  }
  if (found.length === 0) return;
  const [first, ...others] = found;
  const named = others.slice(0, NAMED).map((f) => f.key);
  const rest = others.length - named.length;
  const also =
    others.length === 0
      ? ""
      : `, and so are ${named.join(", ")}${rest > 0 ? ` and ${rest} more` : ""}`;
  problems.warn([first.key], `${EXAMPLE_VALUE}${also}`, {
    got: first.value,
    hint: `Replace the example values with your network's addresses and your machines' MACs before preview: ${DOCUMENTATION_RANGES.join(", ")} and 00:00:5e:00:53:xx reach no real machine`,
  });
};
