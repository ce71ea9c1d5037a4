// Address ranges as numbers: the first and last address of a subnet, and whether two ranges overlap.
// Pure, no resources.
import { canonicalIp, Cidr, IpFamily, ipFamily, parseCidr } from "./addresses";

/** A contiguous range of addresses of one family, inclusive at both ends. */
export interface AddressRange {
  readonly family: IpFamily;
  readonly first: bigint;
  readonly last: bigint;
}

const BITS: Record<IpFamily, number> = { 4: 32, 6: 128 };

/** The address as an unsigned integer (IPv4: 32 bits, IPv6: 128 bits). */
function ipToBigInt(ip: string): bigint {
  const family = ipFamily(ip);
  if (family === 4) {
    return ip.split(".").reduce((n, octet) => (n << 8n) | BigInt(Number(octet)), 0n);
  }
  if (family === 6) {
    // The canonical form may end in an embedded IPv4 address (::ffff:192.0.2.1).
    let text = canonicalIp(ip);
    const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
    if (v4) {
      const n = ipToBigInt(v4[1]);
      text = `${text.slice(0, -v4[1].length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
    }
    const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
    const headGroups = head === "" ? [] : head.split(":");
    const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
    const zeros =
      tail === undefined ? [] : Array(8 - headGroups.length - tailGroups.length).fill("0");
    return [...headGroups, ...zeros, ...tailGroups].reduce(
      (n, group) => (n << 16n) | BigInt(parseInt(group, 16)),
      0n,
    );
  }
  throw new Error(`not an IP address: ${ip}`);
}

/** The range of a subnet written as `address/prefix` (the address need not be the network's). */
export function subnetRange(cidr: Cidr): AddressRange {
  const bits = BITS[cidr.family];
  const hostBits = BigInt(bits - cidr.prefix);
  const first = (ipToBigInt(cidr.ip) >> hostBits) << hostBits;
  return { family: cidr.family, first, last: first + (1n << hostBits) - 1n };
}

/** The range of a CIDR string, or undefined when it does not parse. */
export function rangeOf(value: string): AddressRange | undefined {
  const cidr = parseCidr(value);
  return cidr && subnetRange(cidr);
}

/** A single address as a range of one. */
export function addressRange(ip: string): AddressRange {
  const n = ipToBigInt(ip);
  return { family: ipFamily(ip)!, first: n, last: n };
}

/** True when the two ranges share at least one address. */
export function rangesOverlap(a: AddressRange, b: AddressRange): boolean {
  return a.family === b.family && a.first <= b.last && b.first <= a.last;
}

/**
 * What a host address is, seen from its subnet: the subnet's network address (all host bits zero;
 * IPv6 calls it the subnet-router anycast address), its IPv4 broadcast address (all host bits one), or
 * an ordinary host address. Point-to-point subnets (/31 and /32, /127 and /128) have no such addresses.
 */
export function hostRole(ip: string, cidr: Cidr): "network" | "broadcast" | "host" {
  const bits = BITS[cidr.family];
  if (cidr.prefix >= bits - 1) return "host";
  const range = subnetRange(cidr);
  const n = ipToBigInt(ip);
  if (n === range.first) return "network";
  if (cidr.family === 4 && n === range.last) return "broadcast";
  return "host";
}
