// Quorum placement: etcd keeps quorum while a majority of the control planes is up, so no single
// failure domain may hold more than n − (⌊n/2⌋ + 1) of the n control planes (1 of 3, 2 of 5). Failure
// domains: a Proxmox host; an OCI fault domain within its availability domain; an OpenStack compute
// host named in the availability zone (`zone:host`). Bare-metal machines are each their own. Unpinned
// OpenStack control planes share a Nova anti-affinity server group (openstack.controlPlaneServerGroup),
// which then refuses two control planes pinned to one host.
import { spread } from "../../nodes/placement";
import { KeyPath, keyOf } from "../problems";
import type { IndexedNode } from "../rules";
import type { RawOci } from "../schema";
import type { Rule } from "./rule";

/** How many of `n` control planes one failure domain may hold without costing quorum. */
export function maxPerFailureDomain(n: number): number {
  return n - (Math.floor(n / 2) + 1);
}

/** A control plane's failure domain, when the stack file determines it. */
interface Placed {
  readonly index: number;
  /** `Proxmox host pve1`, `OCI fault domain FAULT-DOMAIN-1 of AD-1`, … */
  readonly domain: string;
  /** The key that puts it there. */
  readonly key: KeyPath;
}

/** OCI: the availability and fault domain of the `poolIndex`-th control plane, when determined. */
function ociDomain(
  { index, node }: IndexedNode,
  poolIndex: number,
  oci: RawOci | undefined,
): Placed | undefined {
  if (node.platform !== "oci") return undefined;
  const listed = oci?.availabilityDomains;
  const spreadOver = listed && spread(poolIndex, listed.length);
  const availabilityDomain =
    node.oci?.availabilityDomain ?? (spreadOver && listed![spreadOver.domainIndex]);
  const faultDomain = node.oci?.faultDomain ?? spreadOver?.faultDomain;
  // Without listed domains the spread is decided at run time from the region's domains.
  if (!availabilityDomain || !faultDomain) return undefined;
  const key: KeyPath = node.oci?.faultDomain
    ? ["nodes", index, "oci", "faultDomain"]
    : node.oci?.availabilityDomain
      ? ["nodes", index, "oci", "availabilityDomain"]
      : ["nodes", index];
  return { index, domain: `OCI fault domain ${faultDomain} of ${availabilityDomain}`, key };
}

/** Every control plane's failure domain that the stack file determines. */
function placedControlPlanes(nodes: readonly IndexedNode[], oci: RawOci | undefined): Placed[] {
  const placed: Placed[] = [];
  let ociPool = 0;
  for (const indexed of nodes) {
    const { index, node } = indexed;
    if (node.role !== "controlplane") continue;
    switch (node.platform) {
      case "proxmox":
        placed.push({
          index,
          domain: `Proxmox host ${node.proxmox.host}`,
          key: ["nodes", index, "proxmox", "host"],
        });
        break;
      case "oci": {
        const domain = ociDomain(indexed, ociPool++, oci);
        if (domain) placed.push(domain);
        break;
      }
      case "openstack": {
        // Nova's `zone:host` pins an instance to one compute host.
        const host = node.openstack?.availabilityZone?.split(":")[1];
        if (host) {
          placed.push({
            index,
            domain: `OpenStack host ${host}`,
            key: ["nodes", index, "openstack", "availabilityZone"],
          });
        }
        break;
      }
      case "baremetal":
        break;
      default: {
        const unhandled: never = node;
        throw new Error(`no failure domain rule for ${JSON.stringify(unhandled)}`);
      }
    }
  }
  return placed;
}

/** No failure domain holds more control planes than quorum allows. */
export const quorumPlacement: Rule = ({ nodes, oci }, problems) => {
  const count = nodes.filter(({ node }) => node.role === "controlplane").length;
  // One control plane has no quorum to keep; an even count is reported on its own.
  if (count < 3 || count % 2 === 0) return;
  const allowed = maxPerFailureDomain(count);
  const byDomain = new Map<string, Placed[]>();
  for (const placed of placedControlPlanes(nodes, oci)) {
    byDomain.set(placed.domain, [...(byDomain.get(placed.domain) ?? []), placed]);
  }
  for (const [domain, placed] of byDomain) {
    if (placed.length <= allowed) continue;
    const last = placed[placed.length - 1];
    problems.add(
      last.key,
      `${placed.map((p) => keyOf(p.key)).join(", ")} put ${placed.length} of the ${count} control planes on ${domain}; ` +
        "losing it would lose etcd quorum",
      {
        hint: `At most ${allowed} of ${count} control planes may share a failure domain: move ${placed.length - allowed === 1 ? "one" : placed.length - allowed} of them elsewhere`,
      },
    );
  }
};

/**
 * With the control planes in a hard anti-affinity server group, Nova refuses to schedule a second
 * one on a compute host that already has one: two pinned to the same `zone:host` never come up.
 */
export const openstackAntiAffinity: Rule = ({ nodes, openstack }, problems) => {
  if (!openstack || (openstack.controlPlaneServerGroup ?? "anti-affinity") !== "anti-affinity")
    return;
  const firstOnHost = new Map<string, number>();
  for (const { index, node } of nodes) {
    if (node.role !== "controlplane" || node.platform !== "openstack") continue;
    const zone = node.openstack?.availabilityZone;
    const host = zone?.split(":")[1];
    if (!host) continue;
    const first = firstOnHost.get(host);
    if (first === undefined) {
      firstOnHost.set(host, index);
      continue;
    }
    problems.add(
      ["nodes", index, "openstack", "availabilityZone"],
      `pins a second control plane to OpenStack host ${host} (nodes[${first}] is there), which the control planes' anti-affinity server group forbids; Nova would not schedule it`,
      {
        got: zone,
        hint: "Pin it to another host, or set openstack.controlPlaneServerGroup to soft-anti-affinity",
      },
    );
  }
};
