// Pure address helpers: parsing IPs and CIDRs, subnet membership, DNS names. No resources, no config.
import { BlockList, isIPv4, isIPv6 } from "node:net";

/** 4 or 6. */
export type IpFamily = 4 | 6;

/** An interface address with its prefix, e.g. `192.0.2.11/24`. */
export interface Cidr {
  /** The address part, as written (`192.0.2.11`). */
  readonly ip: string;
  readonly prefix: number;
  readonly family: IpFamily;
}

/** The IP family of `value`, or undefined when it is not a literal IPv4/IPv6 address. */
export function ipFamily(value: string): IpFamily | undefined {
  // What isIP does, without trying the IPv6 pattern on names and IPv4 addresses (every IPv6 address
  // has a colon, no IPv4 one has): that pattern is costly to compile, which a check of a stack with
  // no IPv6 address then never pays.
  if (value.includes(":")) return isIPv6(value) ? 6 : undefined;
  return isIPv4(value) ? 4 : undefined;
}

/** Parses `address/prefix`; undefined when malformed or the prefix is out of range for the family. */
export function parseCidr(value: string): Cidr | undefined {
  const match = /^([^/\s]+)\/(\d{1,3})$/.exec(value);
  if (!match) return undefined;
  const family = ipFamily(match[1]);
  const prefix = Number(match[2]);
  if (family === undefined || prefix > (family === 4 ? 32 : 128)) return undefined;
  return { ip: match[1], prefix, family };
}

/** True when `ip` lies inside the network of `cidr` (same family). */
export function inSubnet(ip: string, cidr: Cidr): boolean {
  const family = ipFamily(ip);
  if (family !== cidr.family) return false;
  const type = family === 4 ? "ipv4" : "ipv6";
  const list = new BlockList();
  list.addSubnet(cidr.ip, cidr.prefix, type);
  return list.check(ip, type);
}

/** A canonical spelling of an IP, so `2001:db8::1` and `2001:DB8:0::1` compare equal. */
export function canonicalIp(ip: string): string {
  if (ipFamily(ip) !== 6) return ip;
  return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
}

/** A host prefix for an address (`/32` or `/128`). */
export function hostPrefix(address: string): string {
  return `${address}/${ipFamily(address) === 6 ? 128 : 32}`;
}

/** `host:port` with IPv6 hosts bracketed. */
export function hostPort(host: string, port: number): string {
  return ipFamily(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** True for a DNS name such as `api.example.net` (labels of letters, digits and hyphens). */
export function isDnsName(value: string): boolean {
  return (
    value.length <= 253 &&
    value.split(".").every((label) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(label))
  );
}

/** `example.net.` for `example.net` or `example.net.` */
export function fqdn(name: string): string {
  return name.endsWith(".") ? name : `${name}.`;
}

/** True when `name` is `domain` or a name below it (case and trailing dots ignored). */
export function inZone(name: string, domain: string): boolean {
  const [n, d] = [fqdn(name).toLowerCase(), fqdn(domain).toLowerCase()];
  return n === d || n.endsWith(`.${d}`);
}

/** True for a MAC address written as six colon-separated hex pairs. */
export function isMac(value: string): boolean {
  return /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(value);
}
